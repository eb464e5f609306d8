// fake_quant_column_blocks (the linear layer's 1-D blocks down a source's columns, with no
// transpose) against the independent reference of quantize_reference.hpp applied to x^T.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "../../quant/src/quantize/quantize_detail.hpp"
#include "lowp/quant/quantize.hpp"
#include "quant/quantize_reference.hpp"
#include "support/test_support.hpp"

namespace lowp::quant {
namespace {

// rows x cols data whose magnitude changes by 2^k down each column, so that the blocks along
// a column differ (and blocks along a row would not give the same scales), with a NaN, an
// infinity and an all-zero block among them.
std::vector<float> column_data(std::size_t rows, std::size_t cols, std::uint32_t seed) {
  std::vector<float> x = test::normal_floats(rows * cols, seed);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) x[r * cols + c] *= std::ldexp(1.0f, static_cast<int>((r / 5 + 3 * c) % 11) - 5);
  x[3 * cols + 1] = test::kNaN;
  x[40 * cols + 2] = -test::kInf;
  for (std::size_t r = 32; r < 64 && r < rows; ++r) x[r * cols + 5] = 0.0f;
  return x;
}

// Every value is the reference's for element (c, r) of x^T, whose 1-D blocks run along x's
// columns; rows 96 and 80 (b16 and b32 divide them, nvfp4's b16 too), 80 with b32 only when
// padded. The mutant in mind: groups of `block` consecutive elements of x's rows (the
// untransposed spec), or a band's amax taken over all of x's rows.
TEST(QuantizeColumns, ColumnBlocksAreTheBlocksOfTheTranspose) {
  const char* specs[] = {"mxfp8", "mxfp4", "mxfp6", "nvfp4", "e4m3:b32:mx:sat", "int8:b32:int", "e5m2:b16:pow2",
                         "e2m1:b32:rceil", "e4m3:b32:ceil:zero"};
  for (const char* text : specs)
    for (const std::size_t rows : {96, 80}) {
      QuantSpec spec = parse_quant_spec(text);
      if (rows % spec.block != 0) spec.pad = true;
      const std::size_t cols = 12;
      SCOPED_TRACE(std::string(text) + " on " + std::to_string(rows) + "x" + std::to_string(cols));
      ASSERT_TRUE(detail::column_blocks_fit(spec));
      const std::vector<float> x = column_data(rows, cols, 7);
      std::vector<float> xt(rows * cols), out(rows * cols, -1.0f);
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < cols; ++c) xt[c * rows + r] = x[r * cols + c];
      detail::fake_quant_column_blocks(spec, x.data(), out.data(), rows, cols);
      const test_ref::Amaxes am = test_ref::amaxes(spec, xt.data(), cols, rows);
      int bad = 0;
      for (std::size_t r = 0; r < rows && bad < 5; ++r)
        for (std::size_t c = 0; c < cols && bad < 5; ++c) {
          const test_ref::Expected e = test_ref::expected(spec, xt.data(), am, rows, c, r);
          if (!test::same_or_both_nan(out[r * cols + c], e.value)) {
            ++bad;
            ADD_FAILURE() << "element (" << r << ", " << c << ") x = " << x[r * cols + c] << ": " << out[r * cols + c]
                          << " want " << e.value;
          }
        }
    }
}

TEST(QuantizeColumns, OnlyRulesAndRoundingsThatDoNotFollowTheLayout) {
  EXPECT_FALSE(detail::column_blocks_fit(parse_quant_spec("e2m1:b16:nvfp4:stochastic")));  // random bits by position
  EXPECT_FALSE(detail::column_blocks_fit(parse_quant_spec("e4m3:b32:mse")));
  EXPECT_FALSE(detail::column_blocks_fit(parse_quant_spec("e4m3:row")));
  EXPECT_FALSE(detail::column_blocks_fit(parse_quant_spec("e4m3:t32")));
  std::vector<float> x(64), out(64);
  test::expect_error(
      [&] { detail::fake_quant_column_blocks(parse_quant_spec("e4m3:b32:mse"), x.data(), out.data(), 32, 2); },
      {"fake_quant_column_blocks", "does not fit"});
  // The blocks run down the columns: 40 rows are not a whole number of 32-row blocks.
  test::expect_error(
      [&] { detail::fake_quant_column_blocks(parse_quant_spec("mxfp8"), x.data(), out.data(), 40, 1); }, {"40"});
}

}  // namespace
}  // namespace lowp::quant
