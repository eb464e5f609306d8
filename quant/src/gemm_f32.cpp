// C = A B^T in float32 through Eigen. Eigen splits the output among OpenMP threads and keeps
// each element's summation order fixed, so the result does not depend on the thread count.
#include <Eigen/Core>
#include <omp.h>

#include "lowp/quant/gemm.hpp"

namespace lowp::quant {

void gemm_f32(const float* A, const float* B, float* C, std::size_t M, std::size_t N, std::size_t K,
              bool accumulate, int threads) {
  using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  if (M == 0 || N == 0) return;
  Eigen::Map<RowMajor> c(C, static_cast<Eigen::Index>(M), static_cast<Eigen::Index>(N));
  if (K == 0) {
    if (!accumulate) c.setZero();
    return;
  }
  Eigen::Map<const RowMajor> a(A, static_cast<Eigen::Index>(M), static_cast<Eigen::Index>(K));
  Eigen::Map<const RowMajor> b(B, static_cast<Eigen::Index>(N), static_cast<Eigen::Index>(K));
  const int saved = Eigen::nbThreads();
  Eigen::setNbThreads(threads > 0 ? threads : omp_get_max_threads());
  if (accumulate)
    c.noalias() += a * b.transpose();
  else
    c.noalias() = a * b.transpose();
  Eigen::setNbThreads(saved);
}

}  // namespace lowp::quant
