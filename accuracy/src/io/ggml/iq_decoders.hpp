// Block decoders of ggml's grid-coded types (private to io/ggml): one block of 256 elements
// from `b` into y[0..256), with ggml's arithmetic.
#pragma once
#include <cstdint>

namespace lowp::accuracy::ggml::detail {

void decode_iq2_xxs(const std::uint8_t* b, float* y);
void decode_iq2_xs(const std::uint8_t* b, float* y);
void decode_iq2_s(const std::uint8_t* b, float* y);
void decode_iq3_xxs(const std::uint8_t* b, float* y);
void decode_iq3_s(const std::uint8_t* b, float* y);
void decode_iq1_s(const std::uint8_t* b, float* y);
void decode_iq1_m(const std::uint8_t* b, float* y);

}  // namespace lowp::accuracy::ggml::detail
