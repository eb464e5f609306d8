// AVX-512 tiles of gemm_emulated: 8 rows x 32 columns (two vectors of 16 float lanes per row in
// the truncating tile).
#include "lowp/numerics/simd_warnings.hpp"  // first: GCC 12 warns inside the intrinsics
#include "fma_avx512.hpp"
#include "gemm_emulated_simd.hpp"

namespace lowp::quant::detail {
const EmuKernel kEmuAvx512 = EmuSimd<xsimd::avx512f, Fma512, 8, 32>::table(&pack_rows_avx2);
}  // namespace lowp::quant::detail
