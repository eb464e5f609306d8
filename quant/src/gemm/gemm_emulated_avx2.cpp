// AVX2 tiles of gemm_emulated: 6 rows x 4 double lanes.
#include "gemm_emulated_simd.hpp"

namespace lowp::quant::detail {
const EmuKernel kEmuAvx2 = EmuSimd<xsimd::avx2, 6>::table();
}  // namespace lowp::quant::detail
