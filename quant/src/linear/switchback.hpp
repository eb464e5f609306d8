// Internal to the linear layer: SwitchBack's int8 operands and the int8 GEMM with its
// dequantization (the arithmetic is spelled out in lowp/quant/linear.hpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lowp/quant/quantize.hpp"

namespace lowp::quant::detail {

// An int8 GEMM operand L (rows x cols, reduction along cols) with the dequantization
// multiplier absmax / 127 of each row (per_row) or of the whole tensor. The codes hold L
// row-major, or, when `transposed`, L^T row-major (cols x rows): quantized in the source's own
// layout, which the int8 GEMM's packing reads either way.
struct Int8Operand {
  std::vector<std::int8_t> q;
  const std::int8_t* shared = nullptr;  // codes owned by another operand (q then empty)
  std::vector<float> scale;             // rows values, or one
  std::size_t rows = 0, cols = 0;
  bool per_row = false;
  bool transposed = false;
  const std::int8_t* codes() const { return shared ? shared : q.data(); }
};

// Throws lowp::Error (prefixed by `what`) unless `spec` is int8_sym, absmax rule, tensor or
// row granularity: what the int8 GEMM path takes.
void check_int8_spec(const QuantSpec& spec, const std::string& what);

// L = transpose ? src^T : src (src is src_rows x src_cols row-major), quantized per `spec`;
// the codes stay in src's layout (out.transposed = transpose).
void quantize_int8_operand(const float* src, std::size_t src_rows, std::size_t src_cols,
                           bool transpose, const QuantSpec& spec, Int8Operand& out);

// C (A.rows x B.rows) = (float)(A B^T in int32) * (sa[i] * sb[j]) (+ bias[j] when non-null),
// through gemm_s8s8_f32 (the dequantization fused into the GEMM). A must not be transposed.
void int8_gemm_dequant(const Int8Operand& A, const Int8Operand& B, const float* bias, float* C);

// x (rows x cols) = (float)q * scale of its row; A must not be transposed.
void dequantize_int8(const Int8Operand& A, float* x);

}  // namespace lowp::quant::detail
