// Internal to GPTQ, exposed for its test: the upper Cholesky factor U of H^-1 (H^-1 = U^T U)
// of a symmetric positive definite k x k H (row-major, float32), computed as J L^-1 J from the
// Cholesky factor L of the reversed H. Throws lowp::Error when H is not positive definite.
#pragma once
#include <cstddef>
#include <vector>

namespace lowp::quant::calib {

std::vector<float> inverse_upper_cholesky(std::vector<float> h, std::size_t k);

}  // namespace lowp::quant::calib
