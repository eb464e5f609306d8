// C = A B^T in float32: the scalar reference tile, the run-time choice of kernel and the
// blocked driver (B packed, and widened from its stored type, one K block of a panel at a time).
//
// The bits of C depend on the shape alone: each element is a fused multiply-add chain per K
// block of kGemmKc (see gemm_f32_kernels.hpp). Threads take whole tiles of C, so the thread
// count only decides who computes what.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "gemm_f32_kernels.hpp"
#include "gemm_tasks.hpp"
#include "gemv_f32_kernels.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/numerics/half.hpp"

namespace lowp::quant::detail {
namespace {

constexpr std::size_t kScalarMr = 4, kScalarNr = 16;

void scalar_tile(const float* a, std::size_t lda, const float* bp, std::size_t kc, float* c, std::size_t ldc,
                 bool add) {
  float acc[kScalarMr][kScalarNr] = {};
  for (std::size_t k = 0; k < kc; ++k)
    for (std::size_t r = 0; r < kScalarMr; ++r)
      for (std::size_t j = 0; j < kScalarNr; ++j) acc[r][j] = std::fma(a[r * lda + k], bp[k * kScalarNr + j], acc[r][j]);
  for (std::size_t r = 0; r < kScalarMr; ++r)
    for (std::size_t j = 0; j < kScalarNr; ++j) c[r * ldc + j] = add ? c[r * ldc + j] + acc[r][j] : acc[r][j];
}

// bp = B rows [j0, j0 + nj) x columns [k0, k0 + kc) as slivers of nr columns: sliver s holds,
// for each k, columns j0 + s nr .. + nr - 1 (zeros past nj).
void pack_b(const GemmF32Args& g, std::size_t j0, std::size_t nj, std::size_t k0, std::size_t kc, std::size_t nr,
            float* bp) {
  static thread_local Scratch rowbuf;
  const std::size_t slivers = (nj + nr - 1) / nr;
  for (std::size_t s = 0; s < slivers; ++s) {
    float* out = bp + s * kc * nr;
    const std::size_t cols = std::min(nr, nj - s * nr);
    if (g.b_t) {
      for (std::size_t k = 0; k < kc; ++k) {
        std::memcpy(out + k * nr, g.b_t + (k0 + k) * g.N + j0 + s * nr, cols * sizeof(float));
        std::fill(out + k * nr + cols, out + (k + 1) * nr, 0.0f);
      }
      continue;
    }
    float* row = rowbuf.get(kGemmKc);
    for (std::size_t c = 0; c < nr; ++c) {
      if (c < cols) {
        widen_row(g.b, j0 + s * nr + c, k0, kc, row);
        for (std::size_t k = 0; k < kc; ++k) out[k * nr + c] = row[k];
      } else {
        for (std::size_t k = 0; k < kc; ++k) out[k * nr + c] = 0.0f;
      }
    }
  }
}

// ab (mi x kc, row-major) = rows [i0, i0 + mi) x columns [k0, k0 + kc) of an A stored
// transposed (element (i, k) at a[i + k * a_cs]), in 16 x 16 blocks so that both the reads and
// the writes stay within a few cache lines.
void gather_a_transposed(const GemmF32Args& g, std::size_t i0, std::size_t mi, std::size_t k0, std::size_t kc,
                         float* ab) {
  constexpr std::size_t kB = 16;
  for (std::size_t kb = 0; kb < kc; kb += kB)
    for (std::size_t ib = 0; ib < mi; ib += kB) {
      const std::size_t ke = std::min(kc, kb + kB), ie = std::min(mi, ib + kB);
      for (std::size_t k = kb; k < ke; ++k) {
        const float* src = g.a + (i0 * g.a_rs) + (k0 + k) * g.a_cs;
        for (std::size_t i = ib; i < ie; ++i) ab[i * kc + k] = src[i * g.a_rs];
      }
    }
}

// C rows [i0, i1) x columns [j0, j1) over the K block [k0, k0 + kc), from its packed B panel bp.
void compute_block(const GemmF32Args& g, const GemmF32Kernel& kern, std::size_t i0, std::size_t i1, std::size_t j0,
                   std::size_t j1, std::size_t k0, std::size_t kc, const float* bp) {
  static thread_local Scratch abuf, tail, cbuf;
  const std::size_t mr = kern.mr, nr = kern.nr, nj = j1 - j0, mi = i1 - i0;
  const std::size_t slivers = (nj + nr - 1) / nr;
  float* ct = cbuf.get(mr * nr);
  float* at = tail.get(mr * kGemmKc);
  const std::size_t ldc = g.N;
  const bool add = k0 > 0 || g.accumulate;
  const float* ablk;
  std::size_t lda;
  if (g.a_cs == 1) {
    ablk = g.a + i0 * g.a_rs + k0;
    lda = g.a_rs;
  } else {  // A stored transposed: gather this block's rows
    float* ab = abuf.get(mi * kc);
    gather_a_transposed(g, i0, mi, k0, kc, ab);
    ablk = ab;
    lda = kc;
  }
  for (std::size_t i = 0; i < mi; i += mr) {
    const std::size_t rows = std::min(mr, mi - i);
    const float* ap = ablk + i * lda;
    std::size_t la = lda;
    if (rows < mr) {  // the last rows, padded with zero rows
      for (std::size_t r = 0; r < mr; ++r)
        if (r < rows)
          std::memcpy(at + r * kc, ap + r * lda, kc * sizeof(float));
        else
          std::fill(at + r * kc, at + (r + 1) * kc, 0.0f);
      ap = at;
      la = kc;
    }
    float* crow = g.c + (i0 + i) * ldc;
    for (std::size_t s = 0; s < slivers; ++s) {
      const std::size_t j = j0 + s * nr, cols = std::min(nr, j1 - j);
      const float* b = bp + s * kc * nr;
      if (rows == mr && cols == nr) {
        kern.tile(ap, la, b, kc, crow + j, ldc, add);
        continue;
      }
      kern.tile(ap, la, b, kc, ct, nr, false);
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < cols; ++c) {
          float& dst = crow[r * ldc + j + c];
          dst = add ? dst + ct[r * nr + c] : ct[r * nr + c];
        }
    }
  }
}

// C rows [i0, i1) x columns [j0, j1), all of K, packing B as it goes.
void run_tile_block(const GemmF32Args& g, const GemmF32Kernel& kern, std::size_t i0, std::size_t i1, std::size_t j0,
                    std::size_t j1) {
  static thread_local Scratch bbuf;
  const std::size_t nr = kern.nr, slivers = (j1 - j0 + nr - 1) / nr;
  float* bp = bbuf.get(slivers * nr * kGemmKc);
  for (std::size_t k0 = 0; k0 < g.K; k0 += kGemmKc) {
    const std::size_t kc = std::min(kGemmKc, g.K - k0);
    pack_b(g, j0, j1 - j0, k0, kc, nr, bp);
    compute_block(g, kern, i0, i1, j0, j1, k0, kc, bp);
  }
}

}  // namespace

void widen_row(const StoredMatrix& b, std::size_t r, std::size_t k0, std::size_t n, float* out) {
  const std::size_t s = b.row_map ? b.row_map[r] : r;
  // Byte addressing and memcpy loads: a mapped file need not align its tensors.
  const auto* bytes = static_cast<const std::uint8_t*>(b.data);
  const auto u16 = [&](std::size_t i) {
    std::uint16_t h;
    std::memcpy(&h, bytes + 2 * (s * b.cols + k0 + i), 2);
    return h;
  };
  switch (b.type) {
    case StoredType::f32:
      std::memcpy(out, bytes + 4 * (s * b.cols + k0), n * sizeof(float));
      return;
    case StoredType::bf16:
      for (std::size_t i = 0; i < n; ++i) out[i] = bf16_to_f32(u16(i));
      return;
    case StoredType::f16:
      for (std::size_t i = 0; i < n; ++i) out[i] = f16_to_f32(u16(i));
      return;
    case StoredType::custom:
      b.widen(b.ctx, static_cast<const std::uint8_t*>(b.data) + s * b.row_bytes, k0, n, out);
      return;
  }
}

const GemmF32Kernel kGemmF32Scalar = {kScalarMr, kScalarNr, &scalar_tile};

const GemmF32Kernel& gemm_f32_kernel(Isa isa) {
  switch (isa) {
    case Isa::avx512: return kGemmF32Avx512;
    case Isa::avx2: return kGemmF32Avx2;
    case Isa::scalar: break;
  }
  return kGemmF32Scalar;
}

void gemm_f32_run(const GemmF32Args& args, const GemmF32Kernel& kern, int threads) {
  GemmF32Args g = args;
  if (g.M == 0 || g.N == 0) return;
  if (g.K == 0) {
    if (!g.accumulate)
      for (std::size_t i = 0; i < g.M; ++i) std::fill(g.c + i * g.N, g.c + (i + 1) * g.N, 0.0f);
    return;
  }
  // Tiles of C: column panels of up to 256 (a multiple of every kernel's nr; the packed B
  // panel, 256 x kGemmKc floats, stays in L2), and row panels only when there are too few
  // column panels to keep every thread busy (each row panel packs B again).
  constexpr std::size_t kPanelN = 256;
  const std::size_t tn = (g.N + kPanelN - 1) / kPanelN;
  const std::size_t want = 4 * static_cast<std::size_t>(threads);
  std::size_t tm = threads > 1 && tn < want ? (want + tn - 1) / tn : 1;
  tm = std::min(tm, (g.M + 47) / 48);  // row panels of at least 48 rows
  const std::size_t rows_per = ((g.M + tm - 1) / tm + kern.mr - 1) / kern.mr * kern.mr;
  tm = (g.M + rows_per - 1) / rows_per;
  const std::size_t tasks = tm * tn;
  // Task t: C rows [i0, i1) x columns [j0, j1), column panel tj.
  struct Tile {
    std::size_t i0, i1, j0, j1, tj;
  };
  const auto tile = [&](std::size_t t) {
    const std::size_t tj = t % tn, i0 = t / tn * rows_per, j0 = tj * kPanelN;
    return Tile{i0, std::min(g.M, i0 + rows_per), j0, std::min(g.N, j0 + kPanelN), tj};
  };
  Error failure("");
  bool failed = false;
  // An A stored transposed would be gathered by every column panel's tiles: with more than
  // one, gather it once (up to 64 MB) into the calling thread's scratch, in blocks of 16 rows.
  if (g.a_cs != 1 && tn > 1 && g.M * g.K * sizeof(float) <= (std::size_t{64} << 20)) {
    static thread_local Scratch natural;
    float* a = natural.get(g.M * g.K);
    const std::size_t blocks = (g.M + 15) / 16;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
    for (std::ptrdiff_t b = 0; b < static_cast<std::ptrdiff_t>(blocks); ++b) {
      const std::size_t i0 = static_cast<std::size_t>(b) * 16;
      gather_a_transposed(g, i0, std::min<std::size_t>(16, g.M - i0), 0, g.K, a + i0 * g.K);
    }
    g.a = a;
    g.a_rs = g.K;
    g.a_cs = 1;
  }
  // Several row panels per column panel: B is packed (and widened) once, by all threads, into
  // one buffer the tiles share, instead of once per row panel; when that buffer would exceed
  // 64 MB each tile packs its own. Either way every tile computes the same chains.
  const std::size_t kblocks = (g.K + kGemmKc - 1) / kGemmKc, stride = kPanelN * kGemmKc;
  if (tm > 1 && tn * kblocks * stride * sizeof(float) <= (std::size_t{64} << 20)) {
    static thread_local Scratch shared;  // the calling thread's; the team only reads it
    float* packed = shared.get(tn * kblocks * stride);
#pragma omp parallel num_threads(threads)
    {
      for_tasks(tn * kblocks, failed, failure, [&](std::size_t t) {  // t: column panel x K block
        const std::size_t j0 = t / kblocks * kPanelN, k0 = t % kblocks * kGemmKc;
        pack_b(g, j0, std::min(g.N, j0 + kPanelN) - j0, k0, std::min(kGemmKc, g.K - k0), kern.nr, packed + t * stride);
      });
      if (!failed)
        for_tasks(tasks, failed, failure, [&](std::size_t t) {
          const Tile c = tile(t);
          for (std::size_t kb = 0; kb < kblocks; ++kb)
            compute_block(g, kern, c.i0, c.i1, c.j0, c.j1, kb * kGemmKc, std::min(kGemmKc, g.K - kb * kGemmKc),
                          packed + (c.tj * kblocks + kb) * stride);
        });
    }
  } else {
#pragma omp parallel num_threads(threads) if (threads > 1 && tasks > 1)
    for_tasks(tasks, failed, failure, [&](std::size_t t) {
      const Tile c = tile(t);
      run_tile_block(g, kern, c.i0, c.i1, c.j0, c.j1);
    });
  }
  if (failed) throw failure;
}

}  // namespace lowp::quant::detail

namespace lowp::quant {
namespace {

int thread_count(int threads, std::size_t M, std::size_t N, std::size_t K) {
  if (threads < 0) throw Error("gemm_f32: threads = " + std::to_string(threads) + " is negative");
  const int wanted = threads > 0 ? threads : omp_get_max_threads();
  // At least 2^22 multiply-adds per thread: smaller products are not worth waking threads.
  std::size_t work = 0;
  if (__builtin_mul_overflow(M * N, K, &work)) work = SIZE_MAX;
  return static_cast<int>(std::clamp<std::size_t>(work >> 22, 1, static_cast<std::size_t>(wanted)));
}

// One row of A (the decode step): the product reads each element of B once and is bound by
// memory, not arithmetic, so a thread is worth it from 2^16 elements of B (256 KB of float32).
int gemv_thread_count(int threads, std::size_t N, std::size_t K) {
  const int wanted = threads > 0 ? threads : omp_get_max_threads();
  std::size_t work = 0;
  if (__builtin_mul_overflow(N, K, &work)) work = SIZE_MAX;
  return static_cast<int>(std::clamp<std::size_t>(work >> 16, 1, static_cast<std::size_t>(wanted)));
}

// gemm_f32_run, or for one row of A the GEMV, which gives the same bits without packing B.
void run(const detail::GemmF32Args& g, int threads) {
  if (g.M == 1)
    detail::gemv_f32_run(g, detail::gemv_f32_kernel(best_isa()), gemv_thread_count(threads, g.N, g.K));
  else
    detail::gemm_f32_run(g, detail::gemm_f32_kernel(best_isa()), thread_count(threads, g.M, g.N, g.K));
}

void check_stored(const StoredMatrix& B, const char* who) {
  if (B.rows > 0 && B.cols > 0 && !B.data) throw Error(std::string(who) + ": B is null");
  if (B.type == StoredType::custom &&
      (!B.widen || B.block == 0 || detail::kGemmKc % B.block != 0 || B.row_bytes == 0))
    throw Error(std::string(who) + ": a custom stored matrix needs a decoder, a row size and a block dividing " +
                std::to_string(detail::kGemmKc) + " (block " + std::to_string(B.block) + ")");
}

}  // namespace

void gemm_f32(const float* A, const float* B, float* C, std::size_t M, std::size_t N, std::size_t K,
              bool accumulate, int threads) {
  gemm_f32(A, Layout::as_is, B, Layout::as_is, C, M, N, K, accumulate, threads);
}

void gemm_f32(const float* A, Layout a, const float* B, Layout b, float* C, std::size_t M, std::size_t N,
              std::size_t K, bool accumulate, int threads) {
  thread_count(threads, M, N, K);  // checks `threads`
  if (M == 0 || N == 0) return;
  if (!C || (K > 0 && (!A || !B)))
    throw Error(std::string("gemm_f32: ") + (!C ? "C" : !A ? "A" : "B") + " is null");
  detail::GemmF32Args g;
  g.a = A;
  g.a_rs = a == Layout::as_is ? K : 1;
  g.a_cs = a == Layout::as_is ? 1 : M;
  if (b == Layout::as_is)
    g.b = {StoredType::f32, B, N, K};
  else
    g.b_t = B;
  g.c = C;
  g.M = M;
  g.N = N;
  g.K = K;
  g.accumulate = accumulate;
  run(g, threads);
}

void gemm_f32(const float* A, const StoredMatrix& B, float* C, std::size_t M, bool accumulate, int threads) {
  const std::size_t N = B.rows, K = B.cols;
  thread_count(threads, M, N, K);  // checks `threads`
  if (M == 0 || N == 0) return;
  if (!C || (K > 0 && !A)) throw Error(std::string("gemm_f32: ") + (!C ? "C" : "A") + " is null");
  if (K > 0) check_stored(B, "gemm_f32");
  detail::GemmF32Args g;
  g.a = A;
  g.a_rs = K;
  g.b = B;
  g.c = C;
  g.M = M;
  g.N = N;
  g.K = K;
  g.accumulate = accumulate;
  run(g, threads);
}

void widen_rows(const StoredMatrix& B, std::size_t r0, std::size_t n, float* out) {
  if (r0 > B.rows || n > B.rows - r0)
    throw Error("widen_rows: rows [" + std::to_string(r0) + ", " + std::to_string(r0 + n) + ") of a matrix of " +
                std::to_string(B.rows));
  check_stored(B, "widen_rows");
  for (std::size_t r = 0; r < n; ++r) detail::widen_row(B, r0 + r, 0, B.cols, out + r * B.cols);
}

}  // namespace lowp::quant
