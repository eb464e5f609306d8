// The blocked transpose the GEMM drivers and the linear layer share.
#include "transpose.hpp"

#include <algorithm>

namespace lowp::quant::detail {

template <class T>
void transpose(const T* src, T* dst, std::size_t rows, std::size_t cols) {
  // Strips of H source rows, H elements = one 64-byte cache line of dst: each dst line is
  // written whole, and the H source lines being read stay in L1. (Square 2-D tiles thrash:
  // with power-of-two strides all their lines fall into the same cache set.)
  constexpr std::size_t H = 64 / sizeof(T);
  const std::size_t strips = (rows + H - 1) / H;
#pragma omp parallel for schedule(static) if (rows * cols > (1u << 16))
  for (std::size_t s = 0; s < strips; ++s) {
    const std::size_t r0 = s * H, r1 = std::min(rows, r0 + H);
    for (std::size_t c = 0; c < cols; ++c)
      for (std::size_t r = r0; r < r1; ++r) dst[c * rows + r] = src[r * cols + c];
  }
}
template void transpose<float>(const float*, float*, std::size_t, std::size_t);
template void transpose<std::int8_t>(const std::int8_t*, std::int8_t*, std::size_t, std::size_t);

}  // namespace lowp::quant::detail
