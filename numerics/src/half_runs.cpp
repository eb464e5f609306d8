// half_runs.hpp: the scalar runs and the choice of ISA.
#include "lowp/numerics/half_runs.hpp"

#include <cstdint>
#include <cstring>
#include <string>

#include "half_runs_kernels.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/numerics/half.hpp"

namespace lowp {
namespace {

template <float (*Dec)(std::uint16_t)>
void widen(const void* in, float* out, std::size_t n) {
  const auto* b = static_cast<const unsigned char*>(in);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint16_t h;
    std::memcpy(&h, b + 2 * i, 2);
    out[i] = Dec(h);
  }
}

template <std::uint16_t (*Enc)(float)>
void narrow(const float* in, void* out, std::size_t n) {
  auto* b = static_cast<unsigned char*>(out);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint16_t h = Enc(in[i]);
    std::memcpy(b + 2 * i, &h, 2);
  }
}

}  // namespace

namespace detail {
void bf16_to_f32_scalar(const void* in, float* out, std::size_t n) { widen<bf16_to_f32>(in, out, n); }
void f16_to_f32_scalar(const void* in, float* out, std::size_t n) { widen<f16_to_f32>(in, out, n); }
void f32_to_bf16_scalar(const float* in, void* out, std::size_t n) { narrow<f32_to_bf16>(in, out, n); }
void f32_to_f16_scalar(const float* in, void* out, std::size_t n) { narrow<f32_to_f16>(in, out, n); }
}  // namespace detail

const HalfRuns& half_runs(Isa isa) {
  static const HalfRuns scalar{detail::bf16_to_f32_scalar, detail::f16_to_f32_scalar, detail::f32_to_bf16_scalar,
                               detail::f32_to_f16_scalar};
  if (!isa_available(isa))
    throw Error("half runs: this CPU cannot run the " + std::string(isa_name(isa)) + " conversions");
  switch (isa) {
    case Isa::avx512: return detail::half_runs_avx512();
    case Isa::avx2: return detail::half_runs_avx2();
    case Isa::scalar: break;
  }
  return scalar;
}

const HalfRuns& half_runs() {
  static const HalfRuns& best = half_runs(best_isa());
  return best;
}

}  // namespace lowp
