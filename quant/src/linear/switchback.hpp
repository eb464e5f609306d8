// Internal to the linear layer: SwitchBack's int8 operands and the int8 GEMM with its
// dequantization (the arithmetic is spelled out in lowp/quant/linear.hpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lowp/quant/quantize.hpp"

namespace lowp::quant::detail {

// An int8 GEMM operand L (rows x cols, reduction along cols), codes row-major, with the
// dequantization multiplier absmax / 127 of each row (per_row) or of the whole tensor.
struct Int8Operand {
  std::vector<std::int8_t> q;
  std::vector<float> scale;  // rows values, or one
  std::size_t rows = 0, cols = 0;
  bool per_row = false;
};

// Throws lowp::Error (prefixed by `what`) unless `spec` is int8_sym, absmax rule, tensor or
// row granularity: what the int8 GEMM path takes.
void check_int8_spec(const QuantSpec& spec, const std::string& what);

// L = transpose ? src^T : src (src is src_rows x src_cols row-major), quantized per `spec`.
void quantize_int8_operand(const float* src, std::size_t src_rows, std::size_t src_cols,
                           bool transpose, const QuantSpec& spec, Int8Operand& out);

// C (A.rows x B.rows) = (float)(A B^T in int32) * (sa[i] * sb[j]) (+ bias[j] when non-null).
void int8_gemm_dequant(const Int8Operand& A, const Int8Operand& B, const float* bias, float* C);

// x (rows x cols) = (float)q * scale of its row.
void dequantize_int8(const Int8Operand& A, float* x);

}  // namespace lowp::quant::detail
