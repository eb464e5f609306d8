// AVX-512 tiles of gemm_emulated: 8 rows x 8 double lanes.
// GCC 12's AVX-512 headers trip -W(maybe-)uninitialized on their own _mm512_undefined_*()
// (GCC bug 105593, fixed in GCC 13) wherever the intrinsics are inlined; silence that here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include "gemm_emulated_simd.hpp"

namespace lowp::quant::detail {
const EmuKernel kEmuAvx512 = EmuSimd<xsimd::avx512f, 8>::table();
}  // namespace lowp::quant::detail
