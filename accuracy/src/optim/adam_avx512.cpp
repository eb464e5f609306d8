// optim/adam_loops.hpp compiled for AVX-512 (CMakeLists.txt gives this file that ISA's flags):
// 8 doubles a vector where the baseline build's SSE2 does 2, for the divisions and square
// roots that were most of the optimizer's time.
#include "optim/adam_avx512.hpp"

namespace lowp::train::detail {

void adam_moments_f32_avx512(const float* grad, float* mf, float* vf, double* term, std::size_t n,
                             const AdamScalars& s) {
  adam_moments_f32(grad, mf, vf, term, n, s);
}

void adam_update_f32_avx512(float* x, const float* mf, const float* vf, std::size_t n, const AdamScalars& s) {
  adam_update_f32(x, mf, vf, n, s);
}

}  // namespace lowp::train::detail
