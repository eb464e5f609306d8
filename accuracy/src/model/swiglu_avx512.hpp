// model/swiglu_loops.hpp's loops built for AVX-512: call only when best_isa() is Isa::avx512.
#pragma once
#include <cstddef>

namespace lowp::accuracy::detail {

void swiglu_forward_values_avx512(float* h, const float* g, const float* u, std::size_t n);
void swiglu_backward_values_avx512(float* dg, float* du, const float* dh, const float* g, const float* u,
                                   std::size_t n);

}  // namespace lowp::accuracy::detail
