// model/swiglu_loops.hpp compiled for AVX-512 (CMakeLists.txt gives this file that ISA's flags):
// the compiler vectorizes the loops 16 floats or 8 doubles wide, where the baseline build's
// SSE2 does 4 or 2 (its double divisions were most of a small training step's SwiGLU time).
#include "model/swiglu_avx512.hpp"

#include "model/swiglu_loops.hpp"

namespace lowp::accuracy::detail {

void swiglu_forward_values_avx512(float* h, const float* g, const float* u, std::size_t n) {
  swiglu_forward_values(h, g, u, n);
}

void swiglu_backward_values_avx512(float* dg, float* du, const float* dh, const float* g, const float* u,
                                   std::size_t n) {
  swiglu_backward_values(dg, du, dh, g, u, n);
}

}  // namespace lowp::accuracy::detail
