// GEMM operands for the linear layer: transpose / rotate / quantize as the recipe says, and
// the float32 GEMM over operands stored either way round.
#include "linear_operand.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "gemm_f32_kernels.hpp"

#include "lowp/numerics/error.hpp"

namespace lowp::quant::detail {
namespace {

// The spec that quantizes src (natural layout) exactly as `s` quantizes src^T, or nullopt
// when no granularity does (1-D blocks run along the other dimension).
std::optional<QuantSpec> transposed_spec(const QuantSpec& s) {
  QuantSpec t = s;
  switch (s.granularity) {
    case Granularity::tensor:
    case Granularity::tile: return t;  // square tiles: the same groups either way round
    case Granularity::row: t.granularity = Granularity::column; return t;
    case Granularity::column: t.granularity = Granularity::row; return t;
    case Granularity::block: return std::nullopt;
  }
  return std::nullopt;
}

void quantize_in_place(const OperandPlan& plan, const QuantSpec& spec, float* x, std::size_t rows,
                       std::size_t cols) {
  QuantSpec s = spec;
  s.seed = plan.seed;
  if (plan.delayed) {
    fake_quant_delayed(s, x, rows, cols, *plan.delayed);
  } else {
    fake_quant(s, x, rows, cols);
  }
}

}  // namespace

std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b) noexcept {
  std::uint64_t z = a ^ (b * 0x9e3779b97f4a7c15ULL) ^ 0x632be59bd9b4e019ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

template <class T>
void transpose(const T* src, T* dst, std::size_t rows, std::size_t cols) {
  // Strips of H source rows, H elements = one 64-byte cache line of dst: each dst line is
  // written whole, and the H source lines being read stay in L1. (Square 2-D tiles thrash:
  // with power-of-two strides all their lines fall into the same cache set.)
  constexpr std::size_t H = 64 / sizeof(T);
  const std::size_t strips = (rows + H - 1) / H;
#pragma omp parallel for schedule(static) if (rows * cols > (1u << 16))
  for (std::size_t s = 0; s < strips; ++s) {
    const std::size_t r0 = s * H, r1 = std::min(rows, r0 + H);
    for (std::size_t c = 0; c < cols; ++c)
      for (std::size_t r = r0; r < r1; ++r) dst[c * rows + r] = src[r * cols + c];
  }
}
template void transpose<float>(const float*, float*, std::size_t, std::size_t);
template void transpose<std::int8_t>(const std::int8_t*, std::int8_t*, std::size_t, std::size_t);

void prepare_operand(const float* src, std::size_t src_rows, std::size_t src_cols, bool transpose_it,
                     const OperandPlan& plan, Operand& out) {
  const std::size_t rows = transpose_it ? src_cols : src_rows;
  const std::size_t cols = transpose_it ? src_rows : src_cols;
  const std::optional<QuantSpec>& spec = *plan.spec;
  hadamard::Rotation rot = plan.rotation;
  rot.size = cols;
  const bool rotate = rot.kind != hadamard::RotationKind::none;
  const std::size_t n = rows * cols;
  out.own.clear();
  try {
    if (rotate) rot.validate();
    if (spec) check_shape(*spec, rows, cols);
    if (!spec && !rotate) {
      out.data = src;
      out.transposed = transpose_it;
      return;
    }
    std::optional<QuantSpec> natural = spec;
    if (transpose_it && spec && !rotate) natural = transposed_spec(*spec);
    out.own.resize(n);
    float* x = out.own.data();
    if (transpose_it && (rotate || !natural)) {
      // Materialise L: the rotation and 1-D blocks act along L's rows.
      transpose(src, x, src_rows, src_cols);
      out.transposed = false;
      natural = spec;
    } else {
      std::copy(src, src + n, x);
      out.transposed = transpose_it;
    }
    if (rotate) rot.apply(x, rows, cols);
    if (natural) {
      const std::size_t r = out.transposed ? cols : rows, c = out.transposed ? rows : cols;
      quantize_in_place(plan, *natural, x, r, c);
    }
    out.data = x;
  } catch (const Error& e) {
    throw Error(plan.what + " (" + std::to_string(rows) + "x" + std::to_string(cols) + "): " + e.what());
  }
}

void gemm_operands(const Operand& A, const Operand& B, float* C, std::size_t M, std::size_t N,
                   std::size_t K, bool accumulate) {
  // Stored shapes: A is M x K (or K x M when transposed), B is N x K (or K x N).
  GemmF32Args g;
  g.a = A.data;
  g.a_rs = A.transposed ? 1 : K;
  g.a_cs = A.transposed ? M : 1;
  if (B.transposed)
    g.b_t = B.data;
  else
    g.b = {StoredType::f32, B.data, N, K};
  g.c = C;
  g.M = M;
  g.N = N;
  g.K = K;
  g.accumulate = accumulate;
  // At least 2^18 multiply-adds per thread; the bits do not depend on the count.
  std::size_t work = 0;
  if (__builtin_mul_overflow(M * N, K, &work)) work = SIZE_MAX;
  const int threads = static_cast<int>(std::clamp<std::size_t>(work >> 18, 1, static_cast<std::size_t>(omp_get_max_threads())));
  gemm_f32_run(g, gemm_f32_kernel(best_isa()), threads);
}

}  // namespace lowp::quant::detail
