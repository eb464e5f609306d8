// The blocked transpose the GEMM drivers and the linear layer share.
#include "transpose.hpp"

#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <type_traits>

namespace lowp::quant::detail {
namespace {

// Columns [0, cols - cols % 4) of a strip of 16 float rows (src: row stride `cols`) into dst
// (row stride `rows`), by 4 x 4 register transposes in the baseline ISA's 4-float vectors
// (SSE2 on x86-64: no dispatch needed); returns the columns done.
#if XSIMD_WITH_SSE2
std::size_t transpose_strip16(const float* src, float* dst, std::size_t rows, std::size_t cols) {
  using F = xsimd::batch<float, xsimd::sse2>;
  using D = xsimd::batch<double, xsimd::sse2>;
  const std::size_t done = cols / 4 * 4;
  for (std::size_t c = 0; c < done; c += 4)
    for (std::size_t q = 0; q < 16; q += 4) {
      const float* s = src + q * cols + c;
      const F a0 = F::load_unaligned(s), a1 = F::load_unaligned(s + cols), a2 = F::load_unaligned(s + 2 * cols),
              a3 = F::load_unaligned(s + 3 * cols);
      // (a0[0] a1[0] a0[1] a1[1]), (a0[2] a1[2] a0[3] a1[3]), the same for a2, a3; then their
      // 64-bit halves pair up into the four columns.
      const D t0 = xsimd::bitwise_cast<D>(xsimd::zip_lo(a0, a1)), t1 = xsimd::bitwise_cast<D>(xsimd::zip_hi(a0, a1));
      const D t2 = xsimd::bitwise_cast<D>(xsimd::zip_lo(a2, a3)), t3 = xsimd::bitwise_cast<D>(xsimd::zip_hi(a2, a3));
      float* d = dst + c * rows + q;
      xsimd::bitwise_cast<F>(xsimd::zip_lo(t0, t2)).store_unaligned(d);
      xsimd::bitwise_cast<F>(xsimd::zip_hi(t0, t2)).store_unaligned(d + rows);
      xsimd::bitwise_cast<F>(xsimd::zip_lo(t1, t3)).store_unaligned(d + 2 * rows);
      xsimd::bitwise_cast<F>(xsimd::zip_hi(t1, t3)).store_unaligned(d + 3 * rows);
    }
  return done;
}
#else
std::size_t transpose_strip16(const float*, float*, std::size_t, std::size_t) { return 0; }  // all scalar
#endif

// A 16 x 16 block of bytes: four rounds of interleaving rows i and i + 8 (SSE2's byte unpacks)
// transpose it. Returns false where the baseline ISA has no 16-byte vectors.
#if XSIMD_WITH_SSE2
bool transpose_block16(const std::uint8_t* src, std::size_t sld, std::uint8_t* dst, std::size_t dld) {
  using B = xsimd::batch<std::uint8_t, xsimd::sse2>;
  B x[16];
  for (std::size_t i = 0; i < 16; ++i) x[i] = B::load_unaligned(src + i * sld);
  for (int round = 0; round < 4; ++round) {
    B y[16];
    for (std::size_t i = 0; i < 8; ++i) {
      y[2 * i] = xsimd::zip_lo(x[i], x[i + 8]);
      y[2 * i + 1] = xsimd::zip_hi(x[i], x[i + 8]);
    }
    std::copy(y, y + 16, x);
  }
  for (std::size_t i = 0; i < 16; ++i) x[i].store_unaligned(dst + i * dld);
  return true;
}
#else
bool transpose_block16(const std::uint8_t*, std::size_t, std::uint8_t*, std::size_t) { return false; }
#endif

}  // namespace

void transpose_bytes(const std::uint8_t* src, std::size_t sld, std::uint8_t* dst, std::size_t dld, std::size_t rows,
                     std::size_t cols) {
  std::size_t r0 = 0;
  for (; r0 + 16 <= rows; r0 += 16) {
    std::size_t c0 = 0;
    for (; c0 + 16 <= cols; c0 += 16)
      if (!transpose_block16(src + r0 * sld + c0, sld, dst + c0 * dld + r0, dld)) break;
    for (std::size_t c = c0; c < cols; ++c)
      for (std::size_t r = r0; r < r0 + 16; ++r) dst[c * dld + r] = src[r * sld + c];
  }
  for (std::size_t c = 0; c < cols; ++c)
    for (std::size_t r = r0; r < rows; ++r) dst[c * dld + r] = src[r * sld + c];
}

template <class T>
void transpose(const T* src, T* dst, std::size_t rows, std::size_t cols, Isa isa) {
  // Strips of H source rows, H elements = one 64-byte cache line of dst: each dst line is
  // written whole, and the H source lines being read stay in L1. (Square 2-D tiles thrash:
  // with power-of-two strides all their lines fall into the same cache set.)
  constexpr std::size_t H = 64 / sizeof(T);
  const std::size_t strips = (rows + H - 1) / H;
#pragma omp parallel for schedule(static) if (rows * cols > (1u << 16))
  for (std::size_t s = 0; s < strips; ++s) {
    const std::size_t r0 = s * H, r1 = std::min(rows, r0 + H);
    std::size_t c0 = 0;
    if constexpr (std::is_same_v<T, float>) {
      if (r1 - r0 == H)
        c0 = isa == Isa::avx512 ? transpose_strip16_avx512(src + r0 * cols, dst + r0, rows, cols)
                                : transpose_strip16(src + r0 * cols, dst + r0, rows, cols);
    } else {  // bytes: 16 x 16 blocks
      transpose_bytes(reinterpret_cast<const std::uint8_t*>(src + r0 * cols), cols,
                      reinterpret_cast<std::uint8_t*>(dst + r0), rows, r1 - r0, cols);
      c0 = cols;
    }
    for (std::size_t c = c0; c < cols; ++c)
      for (std::size_t r = r0; r < r1; ++r) dst[c * rows + r] = src[r * cols + c];
  }
}
template void transpose<float>(const float*, float*, std::size_t, std::size_t, Isa);
template void transpose<std::int8_t>(const std::int8_t*, std::int8_t*, std::size_t, std::size_t, Isa);

}  // namespace lowp::quant::detail
