// AVX-512 float32 GEMM tile: 12 rows x 32 columns (24 accumulators of the 32 zmm registers).
#include "lowp/numerics/simd_warnings.hpp"  // first: GCC 12 warns inside the intrinsics
#include <immintrin.h>

#include "fma_avx512.hpp"
#include "gemm_f32_kernels_simd.hpp"

namespace lowp::quant::detail {

// The packing is AVX2's (every AVX-512 CPU has it).
const GemmF32Kernel kGemmF32Avx512 = GemmF32Simd<xsimd::avx512f, Fma512, 12, 2>::table(&pack_rows_avx2, false);

}  // namespace lowp::quant::detail
