// Runs of bfloat16 / float16 <-> float32: element i is half.hpp's conversion of element i,
// bitwise (NaN payloads and signalling NaNs included), with the widest instructions the CPU
// runs (F16C and AVX2, AVX-512). The 16-bit side is bytes: a mapped tensor need not be 2-byte
// aligned.
#pragma once
#include <cstddef>

#include "lowp/numerics/cpu.hpp"

namespace lowp {

struct HalfRuns {
  void (*bf16_to_f32)(const void* in, float* out, std::size_t n);
  void (*f16_to_f32)(const void* in, float* out, std::size_t n);
  void (*f32_to_bf16)(const float* in, void* out, std::size_t n);
  void (*f32_to_f16)(const float* in, void* out, std::size_t n);
};

const HalfRuns& half_runs();  // best_isa()'s
// `isa`'s (the tests compare them); throws lowp::Error when this CPU cannot run them.
const HalfRuns& half_runs(Isa isa);

}  // namespace lowp
