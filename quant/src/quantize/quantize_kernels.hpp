// Internal: the two hot loops of quantize, per instruction set. Each row segment is cut into
// groups of `cw` consecutive elements; the scalar kernels are the reference the SIMD ones are
// tested bitwise against (max of integers, one IEEE multiply or divide per element: exact).
#pragma once
#include <cstddef>
#include <cstdint>

#include "lowp/numerics/cpu.hpp"

namespace lowp::quant::detail {

struct QuantKernels {
  // out[g] = bits of the largest finite |x| in group g of x[0..n) (groups of cw, the last
  // one partial); returns the largest |x| bit pattern of all, NaN / Inf included (>= 0x7f800000
  // flags a non-finite element).
  std::uint32_t (*group_max)(const float* x, std::size_t n, std::size_t cw, std::uint32_t* out);
  // acc[k] = max(acc[k], bits of |x[k]| when finite); returns the largest |x| bit pattern.
  std::uint32_t (*max_into)(const float* x, std::size_t n, std::uint32_t* acc);
  // d[k] = s[k] * v[g] (mul) or s[k] / v[g], where the first `lead` elements (1 <= lead <= cw)
  // are group 0 and each following cw elements the next group. s and d may be the same.
  void (*scale_groups)(const float* s, float* d, std::size_t n, std::size_t lead, std::size_t cw, const float* v,
                       bool mul);
  // d[k] = s[k] * v[k] (mul) or s[k] / v[k].
  void (*scale_each)(const float* s, float* d, std::size_t n, const float* v, bool mul);
  // The codec's integer cast and back, round to nearest even, in place: x[k] = nearbyint(x[k])
  // clamped to [lo, hi] (Inf too), +0 for NaN and for every zero result (-0.3 gives +0, as
  // encode / decode do). Adds the NaN and Inf inputs to *nan and *inf. lo, hi: integers of
  // magnitude below 2^24.
  void (*round_int)(float* x, std::size_t n, float lo, float hi, std::size_t* nan, std::size_t* inf);
};

const QuantKernels& quant_kernels(Isa isa);  // isa must be available
const QuantKernels& quant_kernels();         // the best for this CPU

extern const QuantKernels kQuantKernelsScalar, kQuantKernelsAvx2, kQuantKernelsAvx512;

}  // namespace lowp::quant::detail
