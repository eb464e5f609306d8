// A vectorizable e^x for x <= 0 in float (private to lowp_accuracy): the attention's softmax and
// the SwiGLU backward's sigmoid.
#pragma once
#include <algorithm>
#include <bit>
#include <cstdint>

namespace lowp::accuracy::detail {

// e^x for x <= 0 (NaN passes through), within 2 ulps of the exact value above e^-87 and 0 below
// (where e^x < 2^-125): Cody-Waite reduction x = n ln2 + r, |r| <= ln2 / 2, Cephes' degree-7
// polynomial, 2^n built in the exponent field. Branch-free, so the compiler vectorizes the
// loops that call it (a libm call per element would not be) when the file is built with
// -fno-trapping-math (both sides of its selects are evaluated).
// Always inlined: files built for other ISAs include it (model/swiglu_loops.hpp), and an
// out-of-line copy from one of them could stand in for every caller's.
[[gnu::always_inline]] inline float exp_nonpositive(float x) {
  const float xc = std::max(x, -87.0f);  // NaN stays NaN
  float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest
  n = std::min(0.0f, std::max(-126.0f, n));  // NaN -> -126: the int conversion below is defined
  const float r = (xc - n * 0.693359375f) - n * -2.12194440e-4f;  // n ln2 in two parts, exact
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  const float two_n = std::bit_cast<float>(static_cast<std::uint32_t>(static_cast<std::int32_t>(n) + 127) << 23);
  return x < -87.0f ? 0.0f : p * two_n;
}

}  // namespace lowp::accuracy::detail
