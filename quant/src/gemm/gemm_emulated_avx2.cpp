// AVX2 tiles of gemm_emulated: 3 rows x 16 columns (four vectors of 4 double lanes): twelve
// dependency chains, the fastest of the shapes tried (6x8, 5x8, 4x12, 3x12, 2x24, 4x16).
#include "gemm_emulated_simd.hpp"

namespace lowp::quant::detail {
const EmuKernel kEmuAvx2 = EmuSimd<xsimd::fma3<xsimd::avx2>, 3, 16>::table();
}  // namespace lowp::quant::detail
