// Internal: half_runs.hpp's per-ISA tables; each ISA's conversions end with the scalar ones
// for the last elements.
#pragma once
#include <cstddef>

#include "lowp/numerics/half_runs.hpp"

namespace lowp::detail {

void bf16_to_f32_scalar(const void* in, float* out, std::size_t n);
void f16_to_f32_scalar(const void* in, float* out, std::size_t n);
void f32_to_bf16_scalar(const float* in, void* out, std::size_t n);
void f32_to_f16_scalar(const float* in, void* out, std::size_t n);

const HalfRuns& half_runs_avx2();
const HalfRuns& half_runs_avx512();

}  // namespace lowp::detail
