// AVX2 tiles of gemm_emulated: 6 rows x 16 columns, twelve dependency chains in the truncating
// tile (two vectors of 8 float lanes per row), as gemm_f32's AVX2 tile.
#include "fma_avx2.hpp"
#include "gemm_emulated_simd.hpp"

namespace lowp::quant::detail {
const EmuKernel kEmuAvx2 = EmuSimd<xsimd::fma3<xsimd::avx2>, Fma256, 6, 16>::table(&pack_rows_avx2);
}  // namespace lowp::quant::detail
