// SwitchBack's int8 path: absmax int8 quantization of a GEMM operand, and the real int8 GEMM
// with the dequantization by both scales fused into it (gemm_s8s8_f32).
#include "switchback.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "linear_operand.hpp"
#include "lowp/formats/registry.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/quant/gemm_int8.hpp"
#include "lowp/quant/scale_rules.hpp"

namespace lowp::quant::detail {
namespace {

// |x| <= 127.x here, so adding and subtracting 1.5 * 2^23 rounds to the nearest integer,
// ties to even (as nearbyint in the default mode), in plain SSE2 that the compiler vectorises.
inline float round_even(float v) {
  constexpr float kMagic = 12582912.0f;
  return (v + kMagic) - kMagic;
}

// The multiplier absmax/127 of a group, and 127/absmax for quantizing (0 for an all-zero group;
// NaN scale and 0 codes for a group holding a NaN or Inf). Below absmax ~ 3.7e-37, 127/absmax
// overflows: the library's absmax rule clamps it to FLT_MAX (zeros stay zero, the codes shrink)
// and the dequantization multiplier is then its reciprocal, so values still decode right.
struct GroupScale {
  float dequant, quant;
};
GroupScale group_scale(float absmax, bool nonfinite) {
  if (nonfinite) return {std::numeric_limits<float>::quiet_NaN(), 0.0f};
  if (absmax == 0.0f) return {0.0f, 0.0f};
  static const Format int8 = parse_format("int8_sym");
  const float quant = absmax_int_multiplier(absmax, int8);
  return {std::isfinite(127.0f / absmax) ? absmax / 127.0f : 1.0f / quant, quant};
}

// The clamp is written so that a NaN (x * 0 for a NaN or Inf x in a non-finite group) comes
// out as -127 instead of reaching the conversion; that group's scale is NaN anyway.
inline std::int8_t code(float x, float mult) {
  const float r = std::min(127.0f, std::max(-127.0f, round_even(x * mult)));
  return static_cast<std::int8_t>(r);
}

constexpr float kMaxFinite = std::numeric_limits<float>::max();

// Quantizes src (rows x cols, natural layout) into q with scales per `g` (tensor, row or
// column); returns the dequantization multipliers (1, rows or cols values).
std::vector<float> quantize_natural(const float* src, std::size_t rows, std::size_t cols,
                                    Granularity g, std::int8_t* q) {
  const std::size_t n = rows * cols;
  const bool big = n > (1u << 16);
  if (g == Granularity::row) {
    std::vector<float> scale(rows);
#pragma omp parallel for schedule(static) if (big)
    for (std::size_t r = 0; r < rows; ++r) {
      const float* x = src + r * cols;
      float m = 0.0f;
      int bad = 0;
      for (std::size_t c = 0; c < cols; ++c) {
        const float a = std::fabs(x[c]);
        m = std::max(m, a);
        bad |= !(a <= kMaxFinite);
      }
      const GroupScale s = group_scale(m, bad != 0);
      scale[r] = s.dequant;
      for (std::size_t c = 0; c < cols; ++c) q[r * cols + c] = code(x[c], s.quant);
    }
    return scale;
  }
  // Tensor and column groups: per-column maxima first (the tensor's is their maximum), each
  // thread over its band of rows, then combined. A maximum is exact (a NaN never enters it:
  // std::max keeps the running value), so the result does not depend on the split.
  const int nt = big ? omp_get_max_threads() : 1;
  std::vector<float> part(cols * static_cast<std::size_t>(nt), 0.0f);
  std::vector<int> part_bad(part.size(), 0);
#pragma omp parallel num_threads(nt)
  {
    float* pm = part.data() + cols * static_cast<std::size_t>(omp_get_thread_num());
    int* pb = part_bad.data() + cols * static_cast<std::size_t>(omp_get_thread_num());
#pragma omp for schedule(static)
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; ++c) {
        const float a = std::fabs(src[r * cols + c]);
        pm[c] = std::max(pm[c], a);
        pb[c] |= !(a <= kMaxFinite);
      }
  }
  std::vector<float> cmax(part.begin(), part.begin() + static_cast<std::ptrdiff_t>(cols));
  std::vector<int> cbad(part_bad.begin(), part_bad.begin() + static_cast<std::ptrdiff_t>(cols));
  for (int t = 1; t < nt; ++t)
    for (std::size_t c = 0; c < cols; ++c) {
      cmax[c] = std::max(cmax[c], part[t * cols + c]);
      cbad[c] |= part_bad[t * cols + c];
    }
  std::vector<float> mult(cols), scale;
  if (g == Granularity::column) {
    scale.resize(cols);
    for (std::size_t c = 0; c < cols; ++c) {
      const GroupScale s = group_scale(cmax[c], cbad[c] != 0);
      scale[c] = s.dequant;
      mult[c] = s.quant;
    }
  } else {
    const float m = cols ? *std::max_element(cmax.begin(), cmax.end()) : 0.0f;
    const bool bad = std::any_of(cbad.begin(), cbad.end(), [](int b) { return b != 0; });
    const GroupScale s = group_scale(m, bad);
    scale.assign(1, s.dequant);
    std::fill(mult.begin(), mult.end(), s.quant);
  }
#pragma omp parallel for schedule(static) if (big)
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) q[r * cols + c] = code(src[r * cols + c], mult[c]);
  return scale;
}

}  // namespace

void check_int8_spec(const QuantSpec& spec, const std::string& what) {
  const bool ok = spec.format == parse_format("int8_sym") && spec.rule == ScaleRule::absmax_int &&
                  (spec.granularity == Granularity::tensor || spec.granularity == Granularity::row);
  if (!ok)
    throw Error(what + ": the int8 GEMM path takes int8_sym:tensor:int or int8_sym:row:int, not " +
                describe(spec));
}

void quantize_int8_operand(const float* src, std::size_t src_rows, std::size_t src_cols,
                           bool transpose_it, const QuantSpec& spec, Int8Operand& out) {
  out.rows = transpose_it ? src_cols : src_rows;
  out.cols = transpose_it ? src_rows : src_cols;
  out.per_row = spec.granularity == Granularity::row;
  out.transposed = transpose_it;
  out.shared = nullptr;
  out.q.resize(out.rows * out.cols);
  // Rows of src^T are columns of src: quantized in src's layout, per column.
  const Granularity g = transpose_it && out.per_row ? Granularity::column : spec.granularity;
  out.scale = quantize_natural(src, src_rows, src_cols, g, out.q.data());
}

void int8_gemm_dequant(const Int8Operand& A, const Int8Operand& B, const float* bias, float* C) {
  const std::size_t M = A.rows, N = B.rows, K = A.cols;
  if (B.cols != K || A.transposed)
    throw Error("int8 GEMM: reduction sizes differ (" + std::to_string(K) + " vs " +
                std::to_string(B.cols) + ") or A is transposed");
  Int8Dequant dq;
  dq.a_scale = A.scale.data();
  dq.a_per_row = A.per_row;
  dq.b_scale = B.scale.data();
  dq.b_per_row = B.per_row;
  dq.bias = bias;
  gemm_s8s8_f32(A.codes(), B.codes(), B.transposed ? Layout::transposed : Layout::as_is, C, M, N, K, dq);
}

void dequantize_int8(const Int8Operand& A, float* x) {
  if (A.transposed) throw Error("dequantize_int8: a transposed operand");
  const bool big = A.rows * A.cols > (1u << 16);
#pragma omp parallel for schedule(static) if (big)
  for (std::size_t i = 0; i < A.rows; ++i) {
    const float s = A.scale[A.per_row ? i : 0];
    for (std::size_t c = 0; c < A.cols; ++c) x[i * A.cols + c] = static_cast<float>(A.codes()[i * A.cols + c]) * s;
  }
}

}  // namespace lowp::quant::detail
