// The one-row GEMM (gemv_f32_kernels.hpp): the scalar kernels and the driver that walks B's
// rows in their stored type, K block by K block, without packing.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "gemv_f32_kernels.hpp"
#include "work_share.hpp"
#include "lowp/numerics/half.hpp"

namespace lowp::quant::detail {
namespace {

// Element k of a row stored as type t (memcpy: a mapped file need not align its tensors).
float load_elem(StoredType t, const void* row, std::size_t k) {
  const auto* p = static_cast<const std::uint8_t*>(row);
  if (t == StoredType::f32) {
    float v;
    std::memcpy(&v, p + 4 * k, 4);
    return v;
  }
  std::uint16_t h;
  std::memcpy(&h, p + 2 * k, 2);
  return t == StoredType::bf16 ? bf16_to_f32(h) : f16_to_f32(h);
}

constexpr std::size_t kScalarRows = 4;

template <StoredType T>
void scalar_rows(const float* x, const void* const* w, std::size_t kc, float* acc, const void* const*) {
  std::fill(acc, acc + kScalarRows, 0.0f);
  gemv_rows_tail(T, x, w, kScalarRows, 0, kc, acc);
}

void scalar_cols(const float* x, const float* bt, std::size_t ldb, std::size_t kc, std::size_t n, float* acc) {
  for (std::size_t j = 0; j < n; ++j) {
    float a = 0.0f;
    for (std::size_t k = 0; k < kc; ++k) a = std::fma(x[k], bt[k * ldb + j], a);
    acc[j] = a;
  }
}

template <std::size_t Rows = kGemvLaneRows>
void scalar_lanes(const float* x, const float* w, std::size_t n, float* acc) {
  for (std::size_t k = 0; k < n; ++k)
    for (std::size_t r = 0; r < Rows; ++r) acc[r] = std::fma(x[k], w[k * Rows + r], acc[r]);
}

// y[0..n) = acc (the first K block, not accumulating) or y + acc: gemm_f32's C = acc / C + acc.
// Not inlined: of two NaNs an add returns the one its instruction reads first, and GCC may
// order the operands of each inlined copy its own way (seen: a rows-in-place product and an
// interleaved copy's giving NaNs of different payloads); one copy serves every caller.
[[gnu::noinline]] void fold(float* y, const float* acc, std::size_t n, bool add) {
  for (std::size_t j = 0; j < n; ++j) y[j] = add ? y[j] + acc[j] : acc[j];
}

// Columns [j0, j1) of y for B stored transposed (K x N).
void cols_block(const GemmF32Args& g, const GemvF32Kernel& kern, const float* x, std::size_t j0, std::size_t j1) {
  static thread_local Scratch accbuf;
  float* acc = accbuf.get(j1 - j0);
  for (std::size_t k0 = 0; k0 < g.K; k0 += kGemmKc) {
    const std::size_t kc = std::min(kGemmKc, g.K - k0);
    kern.dot_cols(x + k0, g.b_t + k0 * g.N + j0, g.N, kc, j1 - j0, acc);
    fold(g.c + j0, acc, j1 - j0, k0 > 0 || g.accumulate);
  }
}

// Rows [j0, j1) of B (a whole number of the kernel's row groups, except at B's end).
void rows_block(const GemmF32Args& g, const GemvF32Kernel& kern, const float* x, std::size_t j0, std::size_t j1,
                const Ahead& ahead) {
  static thread_local Scratch wide, accbuf;
  const StoredMatrix& b = g.b;
  const std::size_t R = kern.rows;
  float* acc = accbuf.get(R);
  // f32, f16 and bf16 rows are read in place; custom (block-coded) rows without a lanes
  // decoder (lanes_block) are decoded one K block at a time into `wide` (R x kGemmKc floats,
  // in L1) and read from there as float32.
  const bool in_place = b.type != StoredType::custom;
  const std::size_t esize = b.type == StoredType::f32 ? 4 : 2;
  float* buf = in_place ? nullptr : wide.get(R * kGemmKc);
  const auto* bytes = static_cast<const std::uint8_t*>(b.data);
  const void *w[64], *next[64];  // R <= 64
  for (std::size_t r0 = j0; r0 < j1; r0 += R) {
    if (r0 != j0 && !ahead.go()) return;
    const std::size_t rows = std::min(R, j1 - r0);
    // The next group's rows, prefetched by the kernel when they are read in place (past B's
    // end: its last row again). Custom rows are prefetched here: while row r of this group is
    // decoded for K block kb, the kb-th of nkb slices of the next group's row r (the decoder
    // reads a few short rows side by side, which the hardware prefetcher does not follow).
    const bool prefetch = in_place && r0 + R < j1;
    const std::size_t nkb = (g.K + kGemmKc - 1) / kGemmKc;
    for (std::size_t k0 = 0, kb = 0; k0 < g.K; k0 += kGemmKc, ++kb) {
      const std::size_t kc = std::min(kGemmKc, g.K - k0);
      StoredType t = b.type;
      for (std::size_t r = 0; r < rows; ++r) {
        if (in_place) {
          const std::size_t s = b.row_map ? b.row_map[r0 + r] : r0 + r;
          w[r] = bytes + esize * (s * b.cols + k0);
          continue;
        }
        if (r0 + R + r < j1) {
          const std::size_t l = r0 + R + r;
          const auto* p = bytes + (b.row_map ? b.row_map[l] : l) * b.row_bytes;
          for (std::size_t o = kb * b.row_bytes / nkb / 64 * 64, e = (kb + 1) * b.row_bytes / nkb; o < e; o += 64)
            __builtin_prefetch(p + o, 0, 2);
        }
        widen_row(b, r0 + r, k0, kc, buf + r * kGemmKc);
        w[r] = buf + r * kGemmKc;
        t = StoredType::f32;
      }
      for (std::size_t r = 0; prefetch && r < R; ++r) {
        const std::size_t l = std::min(r0 + R + r, j1 - 1), s = b.row_map ? b.row_map[l] : l;
        next[r] = bytes + esize * (s * b.cols + k0);
      }
      // B's last rows (attention's keys, one product per head, mostly end in a part group):
      // the group's missing rows are its last row again, their sums dropped by the fold. Each
      // row's chain is the same fmas in the same order, so the kernel gives the scalar's bits.
      for (std::size_t r = rows; r < R; ++r) w[r] = w[rows - 1];
      kern.dot_rows[static_cast<std::size_t>(t)](x + k0, w, kc, acc, prefetch ? next : nullptr);
      fold(g.c + r0, acc, rows, k0 > 0 || g.accumulate);
    }
  }
}

// Whether B's rows are decoded by StoredMatrix::dot_lanes or widen_lanes (custom blocks).
bool by_lanes(const StoredMatrix& b) {
  return b.type == StoredType::custom && (b.dot_lanes || b.widen_lanes) && b.cols % 32 == 0;
}

// Rows of B per pass of lanes_block.
std::size_t lane_rows(const StoredMatrix& b) { return b.dot_lanes ? kGemvDotRows : kGemvLaneRows; }

// Rows [j0, j1) of B lane_rows(b) at a time, kLaneChunk columns per call (dot_lanes:
// b.dot_columns when set): dot_lanes decodes and dots them in one pass; otherwise widen_lanes
// decodes them straight into lanes, a 32 x 128 float tile (16 KiB) that stays in L1 between the
// decode and the fmas. A 256-element block's scales are unpacked twice (measured faster than 64
// or 256 columns).
void lanes_block(const GemmF32Args& g, const GemvF32Kernel& kern, const float* x, std::size_t j0, std::size_t j1,
                 const Ahead& ahead) {
  constexpr std::size_t kLaneChunk = 128;
  static thread_local Scratch tile, accbuf;
  const StoredMatrix& b = g.b;
  const std::size_t R = lane_rows(b);
  float* buf = tile.get(kGemvLaneRows * kLaneChunk);
  float* acc = accbuf.get(R);
  const auto* bytes = static_cast<const std::uint8_t*>(b.data);
  const void* w[2][kGemvDotRows];  // this pass's rows, the next pass's
  const auto rows_at = [&](std::size_t r0, const void** out) {
    const std::size_t rows = std::min(R, j1 - r0);
    for (std::size_t r = 0; r < R; ++r) {  // past B's end: row r0 again, its sums dropped
      const std::size_t l = r0 + (r < rows ? r : 0);
      out[r] = bytes + (b.row_map ? b.row_map[l] : l) * b.row_bytes;
    }
  };
  const std::size_t calls = b.dot_lanes ? 1 : kGemvLaneRows / kGemvLaneGroup;  // per chunk
  const std::size_t chunk = b.dot_lanes && b.dot_columns ? b.dot_columns : kLaneChunk;
  const std::size_t steps = (g.K + chunk - 1) / chunk * calls;
  rows_at(j0, w[0]);
  for (std::size_t r0 = j0, cur = 0; r0 < j1; r0 += R, cur ^= 1) {
    if (r0 != j0 && !ahead.go()) return;
    const std::size_t rows = std::min(R, j1 - r0);
    const bool next = r0 + R < j1;
    if (next) rows_at(r0 + R, w[cur ^ 1]);
    // The next pass's rows are prefetched into L2, `per` lines per call (the rows' blocks are
    // read in an order the hardware prefetcher does not follow): without a row map they are
    // one run of bytes, swept by one pointer (a row and line cursor there cost a tenth of a
    // Q4_K product's time in cache); else row by row, a cursor, not a division per line
    // (those cost a quarter of a Q8_0 row's time). Written in line: GCC deems a function that
    // only prefetches pure and drops its calls.
    const bool sweep = !b.row_map;
    const std::size_t lines = (b.row_bytes + 63) / 64;
    const char *pf = nullptr, *pf_end = nullptr;
    if (next && sweep) {
      const auto* first = static_cast<const char*>(w[cur ^ 1][0]);
      pf = first - reinterpret_cast<std::uintptr_t>(first) % 64;
      pf_end = first + std::min(R, j1 - r0 - R) * b.row_bytes;
    }
    const std::size_t all = sweep ? static_cast<std::size_t>(pf_end - pf + 63) / 64 : R * lines,
                      per = next && b.prefetch_rows ? (all + steps - 1) / steps : 0;
    std::size_t pf_row = 0, pf_line = 0;
    for (std::size_t k0 = 0; k0 < g.K; k0 += kGemmKc) {
      const std::size_t kc = std::min(kGemmKc, g.K - k0);
      std::fill(acc, acc + R, 0.0f);
      for (std::size_t c = 0; c < kc; c += chunk) {
        const std::size_t n = std::min(chunk, kc - c);
        for (std::size_t q = 0; q < calls; ++q) {
          if (sweep)
            for (std::size_t i = 0; i < per && pf < pf_end; ++i, pf += 64) __builtin_prefetch(pf, 0, 2);
          else
            for (std::size_t i = 0; i < per && pf_row < R; ++i) {
              __builtin_prefetch(static_cast<const char*>(w[cur ^ 1][pf_row]) + 64 * pf_line, 0, 2);
              if (++pf_line == lines) pf_line = 0, ++pf_row;
            }
          if (b.dot_lanes)
            b.dot_lanes(b.ctx, w[cur], k0 + c, n, x + k0 + c, acc);
          else
            b.widen_lanes(b.ctx, w[cur] + q * kGemvLaneGroup, k0 + c, n, buf + q * kGemvLaneGroup, kGemvLaneRows);
        }
        if (!b.dot_lanes) kern.dot_lanes(x + k0 + c, buf, n, acc);
      }
      fold(g.c + r0, acc, rows, k0 > 0 || g.accumulate);
    }
  }
}

}  // namespace

void gemv_rows_tail(StoredType t, const float* x, const void* const* w, std::size_t rows, std::size_t k0,
                    std::size_t kc, float* acc) {
  for (std::size_t r = 0; r < rows; ++r) {
    float a = acc[r];
    for (std::size_t k = k0; k < kc; ++k) a = std::fma(x[k], load_elem(t, w[r], k), a);
    acc[r] = a;
  }
}

void dot_interleaved_scalar(const float* x, const float* w, std::size_t n, float* acc) {
  scalar_lanes<kInterleave>(x, w, n, acc);
}

template <StoredType T>
void dot_interleaved16_scalar(const float* x, const std::uint16_t* w, std::size_t n, float* acc) {
  for (std::size_t k = 0; k < n; ++k)
    for (std::size_t r = 0; r < kInterleave; ++r) acc[r] = std::fma(x[k], load_elem(T, w + k * kInterleave, r), acc[r]);
}
template void dot_interleaved16_scalar<StoredType::f16>(const float*, const std::uint16_t*, std::size_t, float*);
template void dot_interleaved16_scalar<StoredType::bf16>(const float*, const std::uint16_t*, std::size_t, float*);

const GemvF32Kernel kGemvF32Scalar = {
    kScalarRows,
    {&scalar_rows<StoredType::f32>, &scalar_rows<StoredType::f16>, &scalar_rows<StoredType::bf16>},
    &scalar_cols, &scalar_lanes<>};

const GemvF32Kernel& gemv_f32_kernel(Isa isa) {
  switch (isa) {
    case Isa::avx512: return kGemvF32Avx512;
    case Isa::avx2: return kGemvF32Avx2;
    case Isa::scalar: break;
  }
  return kGemvF32Scalar;
}

void gemv_f32_run(const GemmF32Args& g, const GemvF32Kernel& kern, int threads) {
  gemv_f32_run(std::span<const GemmF32Args>(&g, 1), kern, threads);
}

void gemv_f32_run(std::span<const GemmF32Args> gs, const GemvF32Kernel& kern, int threads) {
  if (gs.empty()) return;
  const GemmF32Args& g0 = gs[0];  // every product shares its x (a, a_cs, K)
  if (g0.K == 0) {
    for (const GemmF32Args& g : gs)
      if (!g.accumulate) std::fill(g.c, g.c + g.N, 0.0f);
    return;
  }
  const float* x = g0.a;
  static thread_local Scratch xbuf;
  if (g0.a_cs != 1) {  // the row of an A stored transposed
    float* xs = xbuf.get(g0.K);
    for (std::size_t k = 0; k < g0.K; ++k) xs[k] = g0.a[k * g0.a_cs];
    x = xs;
  }
  // Tasks: contiguous runs of whole row groups (columns of 256 for a transposed B) over the
  // products in order, one per thread, so that each thread streams its own part of the Bs.
  struct Part {
    bool lanes;
    std::size_t unit, first, units;  // the product's row groups are [first, first + units) of all
  };
  static thread_local std::vector<Part> parts;  // no allocation per call (attention makes many small ones)
  parts.clear();
  std::size_t total = 0;
  for (const GemmF32Args& g : gs) {
    const bool lanes = !g.b_t && by_lanes(g.b);
    const std::size_t unit = g.b_t ? 256 : lanes ? lane_rows(g.b) : kern.rows, units = (g.N + unit - 1) / unit;
    parts.push_back({lanes, unit, total, units});
    total += units;
  }
  const std::size_t team =
      std::min({static_cast<std::size_t>(std::max(threads, 1)), total, TeamSpeeds::kMax});
  const Part* part = parts.data();  // the calling thread's: the team's threads read it through this
  const std::size_t nparts = parts.size();
  // Runs unit u (claimed) and, while `ahead` lets it, the units after it in u's product, up to
  // `last` (exclusive). A transposed B's columns go in one sweep: its units are claimed at once.
  run_shares(team, total, [&, part](std::size_t u, std::size_t last, const Ahead& ahead) {
    const Part* p = std::upper_bound(part, part + nparts, u, [](std::size_t v, const Part& q) { return v < q.first; }) - 1;
    const GemmF32Args& g = gs[static_cast<std::size_t>(p - part)];
    const std::size_t end = std::min(last, p->first + p->units), j0 = (u - p->first) * p->unit;
    std::size_t n = 1, f;
    if (g.b_t && ahead.share && end > u + 1) {
      n += ahead.share->take_front(end - u - 1, &f);
      *ahead.done += n - 1;
    }
    const std::size_t j1 = std::min(g.N, ((g.b_t ? u + n : end) - p->first) * p->unit);
    if (g.b_t)
      cols_block(g, kern, x, j0, j1);
    else if (p->lanes)
      lanes_block(g, kern, x, j0, j1, ahead);
    else
      rows_block(g, kern, x, j0, j1, ahead);
  });
}

}  // namespace lowp::quant::detail
