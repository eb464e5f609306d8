// detail::transpose against the definition dst[c][r] = src[r][c], element by element: shapes
// with whole and partial 16-row strips, columns that are and are not multiples of the 4-wide
// and 16-wide register transposes, serial and parallel sizes, float and int8, every ISA.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "../../quant/src/gemm/transpose.hpp"
#include "lowp/numerics/cpu.hpp"

namespace lowp::quant::detail {
namespace {

// Every ISA this CPU runs (the float strips have an SSE2 and an AVX-512 kernel).
template <class T>
void check(std::size_t rows, std::size_t cols) {
  std::vector<T> src(rows * cols);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<T>(i % 251 + 1);  // 0 nowhere: a miss shows
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
    if (!isa_available(isa)) continue;
    std::vector<T> dst(rows * cols, T(-1));
    transpose(src.data(), dst.data(), rows, cols, isa);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; ++c)
        ASSERT_EQ(dst[c * rows + r], src[r * cols + c]) << isa_name(isa) << " " << rows << "x" << cols << " at " << r << "," << c;
  }
}

TEST(Transpose, EveryElementLandsAtItsTransposedPlace) {
  for (std::size_t rows : {1u, 3u, 15u, 16u, 17u, 32u, 37u, 64u})
    for (std::size_t cols : {1u, 3u, 4u, 5u, 8u, 13u, 16u, 33u, 48u}) {
      check<float>(rows, cols);
      check<std::int8_t>(rows, cols);
    }
  check<float>(1024, 96);  // past the parallel threshold (2^16 elements)
  check<float>(96, 1027);
  check<std::int8_t>(1030, 100);
}

}  // namespace
}  // namespace lowp::quant::detail
