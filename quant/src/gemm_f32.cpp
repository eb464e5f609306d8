// C = A B^T in float32 through Eigen.
//
// Eigen's own multi-threading picks its cache blocks (hence the K split of every sum) from the
// thread count, so its results change with it. Here C is cut into panels chosen from the
// shape alone, each computed by a single-threaded Eigen product; threads only decide who
// computes which panel, so the bits do not depend on the thread count.
#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <string>

#include "lowp/numerics/error.hpp"
#include "lowp/quant/gemm.hpp"

namespace lowp::quant {
namespace {

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Stride = Eigen::OuterStride<>;

// Panel width along the split dimension: about an eighth of it, a multiple of 64, in [64, 512].
std::size_t panel_width(std::size_t dim) {
  const std::size_t w = (dim / 8 + 63) / 64 * 64;
  return std::clamp<std::size_t>(w, 64, 512);
}

// C (rows x cols, row stride ldc) = or += A (rows x K) B (cols x K)^T, single-threaded Eigen.
void panel_product(const float* A, const float* B, float* C, std::size_t rows, std::size_t cols,
                   std::size_t K, std::size_t ldc, bool accumulate) {
  const auto idx = [](std::size_t v) { return static_cast<Eigen::Index>(v); };
  Eigen::Map<RowMajor, 0, Stride> c(C, idx(rows), idx(cols), Stride(idx(ldc)));
  Eigen::Map<const RowMajor> a(A, idx(rows), idx(K));
  Eigen::Map<const RowMajor> b(B, idx(cols), idx(K));
  if (accumulate)
    c.noalias() += a * b.transpose();
  else
    c.noalias() = a * b.transpose();
}

}  // namespace

void gemm_f32(const float* A, const float* B, float* C, std::size_t M, std::size_t N, std::size_t K,
              bool accumulate, int threads) {
  if (threads < 0) throw Error("gemm_f32: threads = " + std::to_string(threads) + " is negative");
  if (M == 0 || N == 0) return;
  if (!C || (K > 0 && (!A || !B)))
    throw Error(std::string("gemm_f32: ") + (!C ? "C" : !A ? "A" : "B") + " is null");
  if (K == 0) {
    if (!accumulate) std::fill(C, C + M * N, 0.0f);
    return;
  }
  const bool split_n = N >= M;  // split the longer side of C
  const std::size_t dim = split_n ? N : M;
  const std::size_t width = panel_width(dim);
  const auto panels = static_cast<std::ptrdiff_t>((dim + width - 1) / width);
  // At least 2^22 multiply-adds per thread (small products are not worth waking threads);
  // the panels, hence the results, do not depend on it.
  const int wanted = threads > 0 ? threads : omp_get_max_threads();
  std::size_t work = 0;
  if (__builtin_mul_overflow(M * N, K, &work)) work = SIZE_MAX;
  const int nthreads =
      static_cast<int>(std::clamp<std::size_t>(work >> 22, 1, static_cast<std::size_t>(wanted)));
#pragma omp parallel num_threads(nthreads)
  {
    // Eigen would start its own threads inside a one-thread region: nthreads-var is a
    // per-task setting, so this keeps every panel single-threaded without touching Eigen's
    // global Eigen::setNbThreads (callers must leave that unset).
    omp_set_num_threads(1);
#pragma omp for schedule(dynamic, 1)
    for (std::ptrdiff_t p = 0; p < panels; ++p) {
      const std::size_t lo = static_cast<std::size_t>(p) * width, len = std::min(width, dim - lo);
      if (split_n)
        panel_product(A, B + lo * K, C + lo, M, len, K, N, accumulate);
      else
        panel_product(A + lo * K, B, C + lo * N, len, N, K, N, accumulate);
    }
  }
}

}  // namespace lowp::quant
