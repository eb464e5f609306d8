// gemm_act: the product a stored format defines with quantized activations (StoredMatrix's
// ActProduct), one dot per output element, so a window and a decode step give the same bits.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "lowp/numerics/error.hpp"
#include "lowp/numerics/parallel.hpp"
#include "lowp/quant/gemm.hpp"
#include "work_share.hpp"

namespace lowp::quant {

void gemm_act(const float* A, std::span<const StoredMatrix> B, std::span<float* const> C, std::size_t ldc,
              std::size_t M, int threads) {
  if (B.size() != C.size()) throw Error("gemm_act: " + std::to_string(B.size()) + " matrices but " + std::to_string(C.size()) + " outputs");
  if (B.empty() || M == 0) return;
  const std::size_t k = B[0].cols;
  // Each distinct activation format's rows, quantized once (float-aligned: a block may hold a float).
  struct Act {
    const ActProduct* p;
    std::size_t row_bytes;
    std::vector<float> buf;
  };
  std::vector<Act> acts;
  std::vector<std::size_t> act_of(B.size());
  std::size_t rows = 0;
  for (std::size_t i = 0; i < B.size(); ++i) {
    const ActProduct* p = B[i].act_product;
    if (!p || !p->quantize || !p->dot || B[i].cols != k || k % p->act_block != 0)
      throw Error(std::string("gemm_act: a ") + (B[i].name ? B[i].name : "matrix") + " of " + std::to_string(B[i].rows) +
                  " x " + std::to_string(B[i].cols) + " has no integer product with quantized activations of " +
                  std::to_string(k) + " columns");
    std::size_t a = 0;
    while (a < acts.size() && (acts[a].p->quantize != p->quantize || acts[a].p->act_block != p->act_block)) ++a;
    if (a == acts.size()) acts.push_back({p, k / p->act_block * p->act_bytes, {}});
    act_of[i] = a;
    rows += B[i].rows;
  }
  for (Act& a : acts) {
    a.buf.resize((M * a.row_bytes + sizeof(float) - 1) / sizeof(float));
    auto* out = reinterpret_cast<std::uint8_t*>(a.buf.data());
    parallel_for(M, team_size(M * k, 1 << 16, threads), [&](std::size_t t) { a.p->quantize(A + t * k, k, out + t * a.row_bytes); });
  }
  // Tasks of 16 output rows of one matrix, all matrices' in one team. Each thread owns a
  // contiguous run of them (one stream of rows, which the hardware prefetcher follows; a
  // dynamic schedule's interleaved tasks measured 25 % slower).
  constexpr std::size_t kRows = 16;
  std::vector<std::pair<std::size_t, std::size_t>> tasks;  // (matrix, first row)
  for (std::size_t i = 0; i < B.size(); ++i)
    for (std::size_t r = 0; r < B[i].rows; r += kRows) tasks.emplace_back(i, r);
  const auto run = [&](std::size_t task) {
    const auto [i, r0] = tasks[task];
    const StoredMatrix& W = B[i];
    const Act& a = acts[act_of[i]];
    const auto* act = reinterpret_cast<const std::uint8_t*>(a.buf.data());
    const auto* base = static_cast<const std::uint8_t*>(W.data);
    for (std::size_t r = r0; r < std::min(W.rows, r0 + kRows); ++r) {
      const std::uint8_t* row = base + (W.row_map ? W.row_map[r] : r) * W.row_bytes;
      for (std::size_t t = 0; t < M; ++t) C[i][t * ldc + r] = W.act_product->dot(row, act + t * a.row_bytes, k);
    }
  };
  // One run of tasks per thread, split by the threads' learnt speeds (a thread that a passive
  // wait policy wakes late gets less; a static schedule measured slower than one thread), then
  // stealing from the back.
  const auto team = std::min(static_cast<std::size_t>(team_size(rows * M * k, 1 << 15, threads)),
                             std::min(tasks.size(), detail::TeamSpeeds::kMax));
  detail::run_shares(std::max<std::size_t>(team, 1), tasks.size(), [&](std::size_t u, std::size_t, const detail::Ahead&) { run(u); });
}

void gemm_act(const float* A, const StoredMatrix& B, float* C, std::size_t M, int threads) {
  float* const out[] = {C};
  gemm_act(A, std::span<const StoredMatrix>(&B, 1), out, B.rows, M, threads);
}

}  // namespace lowp::quant
