// AVX-512 tiles of gemm_emulated: 8 rows x 16 columns (two vectors of 8 double lanes).
#include "lowp/numerics/simd_warnings.hpp"  // first: GCC 12 warns inside the intrinsics
#include "gemm_emulated_simd.hpp"

namespace lowp::quant::detail {
const EmuKernel kEmuAvx512 = EmuSimd<xsimd::avx512f, 8, 16>::table();
}  // namespace lowp::quant::detail
