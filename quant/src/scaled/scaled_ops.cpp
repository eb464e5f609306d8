// Scale propagation through the arithmetic ops: matmul, sums, add/sub, mul.
#include <algorithm>
#include <cmath>
#include <string>

#include "lowp/numerics/error.hpp"
#include "lowp/quant/gemm.hpp"
#include "lowp/quant/scaled_tensor.hpp"

namespace lowp::quant {

namespace {

std::string shape(const ScaledTensor& a) { return std::to_string(a.rows) + "x" + std::to_string(a.cols); }

// Where b's element broadcast onto a's element (i, j) sits; throws on a shape mismatch.
struct Broadcast {
  std::size_t row_step = 0, col_step = 0;
  Broadcast(const ScaledTensor& a, const ScaledTensor& b, const char* op) {
    if ((b.rows != a.rows && b.rows != 1) || (b.cols != a.cols && b.cols != 1))
      throw Error(std::string(op) + ": shape " + shape(b) + " does not broadcast onto " + shape(a));
    row_step = b.rows == 1 ? 0 : b.cols;
    col_step = b.cols == 1 ? 0 : 1;
  }
  std::size_t at(std::size_t i, std::size_t j) const { return i * row_step + j * col_step; }
};

// a (M x K) times bt (N x K) transposed, with the matmul rule.
ScaledTensor gemm_rule(const ScaledTensor& a, const ScaledTensor& bt, std::optional<Format> out) {
  const std::size_t k = a.cols;
  std::vector<float> c(a.rows * bt.rows);
  // Small products run on one thread: waking a team costs more than the work (and a loaded
  // machine makes it far worse). The result does not depend on the thread count.
  const bool small = a.rows * bt.rows * k < (std::size_t{1} << 22);
  gemm_f32(a.data.data(), bt.data.data(), c.data(), a.rows, bt.rows, k, false, small ? 1 : 0);
  const float d = matmul_divisor(k);
  for (float& x : c) x /= d;
  return scaled_from_data(std::move(c), a.rows, bt.rows, out.value_or(a.format),
                          static_cast<double>(a.scale) * bt.scale * d);
}

template <class F>
ScaledTensor elementwise2(const ScaledTensor& a, const ScaledTensor& b, const char* op, double scale,
                          std::optional<Format> out, F f) {
  const Broadcast bc(a, b, op);
  std::vector<float> d(a.size());
  for (std::size_t i = 0; i < a.rows; ++i)
    for (std::size_t j = 0; j < a.cols; ++j) d[i * a.cols + j] = f(a.data[i * a.cols + j], b.data[bc.at(i, j)]);
  return scaled_from_data(std::move(d), a.rows, a.cols, out.value_or(a.format), scale);
}

// add/sub: scale p2(max * sqrt(1 + (min/max)^2)), the RMS of a sum of two independent unit
// tensors scaled by sa and sb; each operand's data are multiplied by its scale ratio.
ScaledTensor add_rule(const ScaledTensor& a, const ScaledTensor& b, float sign, const char* op,
                      std::optional<Format> out) {
  const double hi = std::max(a.scale, b.scale), lo = std::min(a.scale, b.scale);
  const double r = lo / hi;
  const float s = pow2_floor(hi * std::sqrt(1 + r * r));
  const float ra = static_cast<float>(a.scale / static_cast<double>(s));
  const float rb = static_cast<float>(sign * (b.scale / static_cast<double>(s)));
  return elementwise2(a, b, op, s, out, [=](float x, float y) { return x * ra + y * rb; });
}

}  // namespace

ScaledTensor matmul(const ScaledTensor& a, const ScaledTensor& b, std::optional<Format> out) {
  check_scaled(a, "matmul");
  check_scaled(b, "matmul");
  if (a.cols != b.rows) throw Error("matmul: inner dimensions differ (" + shape(a) + " times " + shape(b) + ")");
  return gemm_rule(a, transpose(b), out);
}

ScaledTensor matmul_nt(const ScaledTensor& a, const ScaledTensor& b, std::optional<Format> out) {
  check_scaled(a, "matmul_nt");
  check_scaled(b, "matmul_nt");
  if (a.cols != b.cols)
    throw Error("matmul_nt: inner dimensions differ (" + shape(a) + " times transposed " + shape(b) + ")");
  return gemm_rule(a, b, out);
}

ScaledTensor add(const ScaledTensor& a, const ScaledTensor& b, std::optional<Format> out) {
  check_scaled(a, "add");
  check_scaled(b, "add");
  return add_rule(a, b, 1.0f, "add", out);
}

ScaledTensor sub(const ScaledTensor& a, const ScaledTensor& b, std::optional<Format> out) {
  check_scaled(a, "sub");
  check_scaled(b, "sub");
  return add_rule(a, b, -1.0f, "sub", out);
}

ScaledTensor mul(const ScaledTensor& a, const ScaledTensor& b, std::optional<Format> out) {
  check_scaled(a, "mul");
  check_scaled(b, "mul");
  return elementwise2(a, b, "mul", static_cast<double>(a.scale) * b.scale, out,
                      [](float x, float y) { return x * y; });
}

ScaledTensor mul_scalar(const ScaledTensor& a, float c, std::optional<Format> out) {
  check_scaled(a, "mul_scalar");
  if (!std::isfinite(c)) throw Error("mul_scalar: factor " + std::to_string(c) + " is not finite");
  const float p = c == 0 ? 1.0f : pow2_floor(std::fabs(c));
  const float m = c / p;  // exact: p is a power of two
  std::vector<float> d = a.data;
  for (float& x : d) x *= m;
  return scaled_from_data(std::move(d), a.rows, a.cols, out.value_or(a.format), static_cast<double>(a.scale) * p);
}

ScaledTensor sum_rows(const ScaledTensor& a, std::optional<Format> out) {
  check_scaled(a, "sum_rows");
  std::vector<double> acc(a.cols, 0.0);
  for (std::size_t i = 0; i < a.rows; ++i)
    for (std::size_t j = 0; j < a.cols; ++j) acc[j] += a.data[i * a.cols + j];
  const float d = matmul_divisor(a.rows);
  std::vector<float> r(a.cols);
  for (std::size_t j = 0; j < a.cols; ++j) r[j] = static_cast<float>(acc[j] / d);
  return scaled_from_data(std::move(r), 1, a.cols, out.value_or(a.format), static_cast<double>(a.scale) * d);
}

ScaledTensor sum_cols(const ScaledTensor& a, std::optional<Format> out) {
  check_scaled(a, "sum_cols");
  const float d = matmul_divisor(a.cols);
  std::vector<float> r(a.rows);
  for (std::size_t i = 0; i < a.rows; ++i) {
    double acc = 0;
    for (std::size_t j = 0; j < a.cols; ++j) acc += a.data[i * a.cols + j];
    r[i] = static_cast<float>(acc / d);
  }
  return scaled_from_data(std::move(r), a.rows, 1, out.value_or(a.format), static_cast<double>(a.scale) * d);
}

}  // namespace lowp::quant
