// Included first by every kernel file compiled with AVX-512 flags (*_avx512.cpp, *_vnni.cpp,
// *_amx.cpp), before <immintrin.h> or xsimd. GCC 12's AVX-512 headers make the value of
// _mm512_undefined_*() by self-initialisation (`__m512i __Y = __Y;`), and GCC 12 reports
// '__Y' as (maybe) used uninitialized wherever such an intrinsic is inlined into our kernels
// (GCC bug 105593, fixed in GCC 13). The AVX2 files do not trip it. Clang does not warn.
#pragma once
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
