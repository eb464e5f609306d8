// gemm_act: the product a stored format defines with quantized activations (StoredMatrix's
// ActProduct), one dot per output element, so a window and a decode step give the same bits.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "lowp/numerics/error.hpp"
#include "lowp/numerics/parallel.hpp"
#include "lowp/quant/gemm.hpp"

namespace lowp::quant {

void gemm_act(const float* A, const StoredMatrix& B, float* C, std::size_t M, int threads) {
  const ActProduct* p = B.act_product;
  if (!p || !p->quantize || !p->dot || B.cols % p->act_block != 0)
    throw Error(std::string("gemm_act: a ") + (B.name ? B.name : "matrix") + " of " + std::to_string(B.rows) + " x " +
                std::to_string(B.cols) + " has no integer product with quantized activations");
  const std::size_t k = B.cols, n = B.rows, act_row = k / p->act_block * p->act_bytes;
  if (M == 0 || n == 0) return;
  // Rows of activation blocks, float-aligned (an activation block may hold a float).
  std::vector<float> buf((M * act_row + sizeof(float) - 1) / sizeof(float));
  auto* act = reinterpret_cast<std::uint8_t*>(buf.data());
  parallel_for(M, team_size(M * k, 1 << 16, threads), [&](std::size_t t) { p->quantize(A + t * k, k, act + t * act_row); });
  // 16 output rows a task, statically scheduled: each thread streams a contiguous run of rows.
  constexpr std::size_t kRows = 16;
  const auto* base = static_cast<const std::uint8_t*>(B.data);
  parallel_for((n + kRows - 1) / kRows, team_size(n * M * k, 1 << 15, threads), [&](std::size_t c) {
    for (std::size_t r = c * kRows; r < std::min(n, c * kRows + kRows); ++r) {
      const std::uint8_t* row = base + (B.row_map ? B.row_map[r] : r) * B.row_bytes;
      for (std::size_t t = 0; t < M; ++t) C[t * n + r] = p->dot(row, act + t * act_row, k);
    }
  });
}

}  // namespace lowp::quant
