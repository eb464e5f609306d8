// The next token from a row of logits, as `lowp generate` picks it.
#pragma once
#include <cstdint>
#include <span>

namespace lowp::accuracy {

// temperature <= 0: the first index of the largest logit (llama2.c run.c's argmax). Otherwise a
// draw from softmax(logits / temperature) by inverting its CDF at one uniform number
// u = (random_bits(rng_key(seed), position) + 0.5) / 2^32 (lowp/numerics/rng.hpp), so a draw
// depends on (seed, position) alone; probabilities below ~2^-32 of the total are never drawn.
// Throws lowp::Error on an empty row.
int sample_token(std::span<const float> logits, double temperature, std::uint64_t seed, std::uint64_t position);

}  // namespace lowp::accuracy
