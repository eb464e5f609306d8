// optim/adam_loops.hpp's loops built for AVX-512: call only when best_isa() is Isa::avx512.
#pragma once
#include <cstddef>

#include "optim/adam_loops.hpp"

namespace lowp::train::detail {

void adam_moments_f32_avx512(const float* grad, float* mf, float* vf, double* term, std::size_t n,
                             const AdamScalars& s);
void adam_update_f32_avx512(float* x, const float* mf, const float* vf, std::size_t n, const AdamScalars& s);

}  // namespace lowp::train::detail
