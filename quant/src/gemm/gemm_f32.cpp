// C = A B^T in float32: the scalar reference tile, the run-time choice of kernel and the
// blocked driver (A and B packed, B widened from its stored type, one K block at a time).
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
#include <utility>
#include <vector>

#include "gemm_f32_kernels.hpp"
#include "gemm_tasks.hpp"
#include "gemv_f32_kernels.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/numerics/half_runs.hpp"
#include "lowp/numerics/parallel.hpp"

namespace lowp::quant::detail {
namespace {

constexpr std::size_t kScalarMr = 4, kScalarNr = 16;

void scalar_tile(const float* ap, const float* bp, std::size_t kc, float* c, std::size_t ldc, bool add,
                 const float* /*c_next*/) {
  float acc[kScalarMr][kScalarNr] = {};
  for (std::size_t k = 0; k < kc; ++k)
    for (std::size_t r = 0; r < kScalarMr; ++r)
      for (std::size_t j = 0; j < kScalarNr; ++j)
        acc[r][j] = std::fma(ap[k * kScalarMr + r], bp[k * kScalarNr + j], acc[r][j]);
  for (std::size_t r = 0; r < kScalarMr; ++r)
    for (std::size_t j = 0; j < kScalarNr; ++j) c[r * ldc + j] = add ? c[r * ldc + j] + acc[r][j] : acc[r][j];
}

// The loop nest (BLIS's): C is cut into column panels of up to kNc columns; for each K block
// the panel's B (kc x nc floats, up to 4 MB: in L3) is packed once and shared by the threads.
// A task takes a block of up to kMc rows of A, packs it (mc x kc, 144 KB: in L2) and runs it
// against its run of B slivers, each sliver (kc x nr, in L1) against every A sliver of the block.
constexpr std::size_t kNc = 4096, kMc = 144;  // kMc: a multiple of every kernel's mr
constexpr std::size_t kWholeB = std::size_t{1} << 18;  // floats of B packed at once for every K block (1 MB)

// Where the float32 elements of logical row r of an f32 StoredMatrix start (at any alignment).
const std::uint8_t* f32_row(const StoredMatrix& b, std::size_t r) {
  return static_cast<const std::uint8_t*>(b.data) + 4 * (b.row_map ? b.row_map[r] : r) * b.cols;
}

// Rows [j, j + cols) of a grouped B (gemm.hpp), all in one group, x columns [k0, k0 + kc) as a
// sliver of nr columns: a k's elements of the rows lie side by side, so float32 ones are packed
// as columns and 16-bit ones widened (exactly) as they are packed.
void pack_grouped(const StoredMatrix& b, std::size_t j, std::size_t cols, std::size_t nr, std::size_t k0, std::size_t kc,
                  const GemmF32Kernel& kern, float* out) {
  const std::size_t G = b.grouped_rows, at = (j / G * b.cols + k0) * G + j % G;
  if (b.grouped_type == StoredType::f32) return kern.pack_cols(static_cast<const float*>(b.data) + at, G, cols, nr, kc, out);
  const auto* w = static_cast<const std::uint16_t*>(b.data) + at;
  const auto widen = b.grouped_type == StoredType::bf16 ? half_runs().bf16_to_f32 : half_runs().f16_to_f32;
  for (std::size_t k = 0; k < kc; ++k, w += G, out += nr) {
    widen(w, out, cols);
    std::fill(out + cols, out + nr, 0.0f);
  }
}

// bp = B rows [j0, j0 + nj) x columns [k0, k0 + kc) as slivers of nr columns: sliver s holds,
// for each k, columns j0 + s nr .. + nr - 1 (zeros past nj). Rows stored in another type than
// float32 are widened into a buffer first.
void pack_b(const GemmF32Args& g, const GemmF32Kernel& kern, std::size_t j0, std::size_t nj, std::size_t k0,
            std::size_t kc, float* bp) {
  static thread_local Scratch rowbuf;
  const std::size_t nr = kern.nr, slivers = (nj + nr - 1) / nr;
  for (std::size_t s = 0; s < slivers; ++s) {
    float* out = bp + s * kc * nr;
    const std::size_t cols = std::min(nr, nj - s * nr), j = j0 + s * nr;
    if (g.b_t) {
      kern.pack_cols(g.b_t + k0 * g.N + j, g.N, cols, nr, kc, out);
      continue;
    }
    if (const std::size_t G = g.b.grouped_rows; G && j % G + cols <= G) {  // no row map (check_stored)
      pack_grouped(g.b, j, cols, nr, k0, kc, kern, out);
      continue;
    }
    const void* rows[kMaxWidth];
    if (g.b.type == StoredType::f32) {
      for (std::size_t c = 0; c < cols; ++c) rows[c] = f32_row(g.b, j + c) + 4 * k0;
    } else {
      float* wide = rowbuf.get(kMaxWidth * kGemmKc);
      for (std::size_t c = 0; c < cols; ++c) {
        widen_row(g.b, j + c, k0, kc, wide + c * kc);
        rows[c] = wide + c * kc;
      }
    }
    kern.pack_rows(rows, cols, nr, kc, out);
  }
}

// ap = A rows [i0, i0 + mi) x columns [k0, k0 + kc) as slivers of mr rows: sliver t holds, for
// each k, rows i0 + t mr .. + mr - 1 (zeros past mi).
void pack_a(const GemmF32Args& g, const GemmF32Kernel& kern, std::size_t i0, std::size_t mi, std::size_t k0,
            std::size_t kc, float* ap) {
  const std::size_t mr = kern.mr;
  for (std::size_t t = 0; t * mr < mi; ++t) {
    float* out = ap + t * kc * mr;
    const std::size_t rows = std::min(mr, mi - t * mr);
    const float* a = g.a + (i0 + t * mr) * g.a_rs + k0 * g.a_cs;
    if (g.a_cs == 1) {  // rows along k
      const void* p[kMaxWidth];
      for (std::size_t r = 0; r < rows; ++r) p[r] = a + r * g.a_rs;
      kern.pack_rows(p, rows, mr, kc, out);
      continue;
    }
    if (g.a_rs == 1) {  // stored transposed: the rows of a k side by side
      kern.pack_cols(a, g.a_cs, rows, mr, kc, out);
      continue;
    }
    for (std::size_t k = 0; k < kc; ++k) {
      for (std::size_t r = 0; r < rows; ++r) out[k * mr + r] = a[r * g.a_rs + k * g.a_cs];
      std::fill(out + k * mr + rows, out + (k + 1) * mr, 0.0f);
    }
  }
}

// C rows [i0, i0 + mi) x the columns of B slivers [s0, s1) of the panel starting at column j0
// (ending at j1), over one K block: packed A block ap times packed B panel bp.
void compute_block(const GemmF32Args& g, const GemmF32Kernel& kern, const float* ap, std::size_t i0, std::size_t mi,
                   const float* bp, std::size_t s0, std::size_t s1, std::size_t j0, std::size_t j1, std::size_t kc,
                   bool add, float* ct) {
  const std::size_t mr = kern.mr, nr = kern.nr, ldc = g.N, tiles = (mi + mr - 1) / mr;
  const std::size_t lines = kc * nr * sizeof(float) / 64;  // of a B sliver (64-byte aligned)
  // C of the full tile at row i of sliver s, or null for an edge tile (which goes through ct).
  const auto full = [&](std::size_t s, std::size_t i) -> float* {
    const std::size_t j = j0 + s * nr;
    return i + mr <= mi && j + nr <= j1 ? g.c + (i0 + i) * ldc + j : nullptr;
  };
  for (std::size_t s = s0; s < s1; ++s) {
    const std::size_t j = j0 + s * nr, cols = std::min(nr, j1 - j);
    const float* b = bp + s * kc * nr;
    for (std::size_t i = 0; i < mi; i += mr) {
      // The next sliver is in L3 once the panel outgrows L2 (from ~400 columns), where the
      // tiles may wait for it line by line: fetch it a share at a time over this sliver's tiles.
      if (kern.prefetch_next_sliver && s + 1 < s1)
        for (std::size_t l = i / mr * lines / tiles; l < (i / mr + 1) * lines / tiles; ++l)
          __builtin_prefetch(b + kc * nr + l * 16, 0, 1);
      const float* a = ap + i * kc;
      const float* next = i + mr < mi ? full(s, i + mr) : s + 1 < s1 ? full(s + 1, 0) : nullptr;
      if (float* c = full(s, i)) {
        kern.tile(a, b, kc, c, ldc, add, next);
        continue;
      }
      kern.tile(a, b, kc, ct, nr, false, next);  // an edge tile: through a full one
      const std::size_t rows = std::min(mr, mi - i);
      float* c = g.c + (i0 + i) * ldc + j;
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t q = 0; q < cols; ++q) c[r * ldc + q] = add ? c[r * ldc + q] + ct[r * nr + q] : ct[r * nr + q];
    }
  }
}

}  // namespace

void widen_row(const StoredMatrix& b, std::size_t r, std::size_t k0, std::size_t n, float* out) {
  const std::size_t s = b.row_map ? b.row_map[r] : r;
  // Byte addressing (half_runs reads bytes): a mapped file need not align its tensors.
  const auto* bytes = static_cast<const std::uint8_t*>(b.data);
  switch (b.type) {
    case StoredType::f32:
      std::memcpy(out, f32_row(b, r) + 4 * k0, n * sizeof(float));
      return;
    case StoredType::bf16:
      half_runs().bf16_to_f32(bytes + 2 * (s * b.cols + k0), out, n);
      return;
    case StoredType::f16:
      half_runs().f16_to_f32(bytes + 2 * (s * b.cols + k0), out, n);
      return;
    case StoredType::custom:
      b.widen(b.ctx, static_cast<const std::uint8_t*>(b.data) + s * b.row_bytes, k0, n, out);
      return;
  }
}

void pack_rows_scalar(const void* const* rows, std::size_t n, std::size_t width, std::size_t kc, float* out) {
  for (std::size_t k = 0; k < kc; ++k)
    for (std::size_t r = 0; r < width; ++r) {
      float v = 0.0f;
      if (r < n) std::memcpy(&v, static_cast<const std::uint8_t*>(rows[r]) + 4 * k, sizeof(float));
      out[k * width + r] = v;
    }
}

void pack_cols_scalar(const float* src, std::size_t ld, std::size_t n, std::size_t width, std::size_t kc, float* out) {
  for (std::size_t k = 0; k < kc; ++k) {
    if (n > 0) std::copy_n(src + k * ld, n, out + k * width);  // src may hold no element when n is 0
    std::fill(out + k * width + n, out + (k + 1) * width, 0.0f);
  }
}

const GemmF32Kernel kGemmF32Scalar = {kScalarMr, kScalarNr, &scalar_tile, &pack_rows_scalar, &pack_cols_scalar};

const GemmF32Kernel& gemm_f32_kernel(Isa isa) {
  switch (isa) {
    case Isa::avx512: return kGemmF32Avx512;
    case Isa::avx2: return kGemmF32Avx2;
    case Isa::scalar: break;
  }
  return kGemmF32Scalar;
}

void gemm_f32_run(const GemmF32Args& g, const GemmF32Kernel& kern, int threads) {
  if (g.M == 0 || g.N == 0) return;
  if (g.K == 0) {
    if (!g.accumulate)
      for (std::size_t i = 0; i < g.M; ++i) std::fill(g.c + i * g.N, g.c + (i + 1) * g.N, 0.0f);
    return;
  }
  const std::size_t mr = kern.mr, nr = kern.nr, nt = static_cast<std::size_t>(threads);
  // Column panels of equal widths (multiples of nr) up to kNc.
  const std::size_t panels = (g.N + kNc - 1) / kNc;
  const std::size_t nc = ((g.N + panels - 1) / panels + nr - 1) / nr * nr;
  // Row blocks of equal heights (multiples of mr) up to kMc, as many as a multiple of the thread
  // count when there are enough rows; with fewer blocks than threads, each panel's slivers are
  // split into runs as well (each run packing the block's A again).
  const std::size_t row_slivers = (g.M + mr - 1) / mr;
  std::size_t rb = std::min(row_slivers, ((g.M + kMc - 1) / kMc + nt - 1) / nt * nt);
  const std::size_t mc = (row_slivers + rb - 1) / rb * mr;
  rb = (g.M + mc - 1) / mc;
  const std::size_t runs = std::min(nc / nr, rb < nt ? (nt + rb - 1) / rb : 1), per_run = (nc / nr + runs - 1) / runs;
  const std::size_t kblocks = (g.K + kGemmKc - 1) / kGemmKc, stride = nc * kGemmKc;
  // A team packs B and waits at a barrier before computing with it: once a K block, or, when
  // one panel's B has every K block within kWholeB floats (a weight gradient's long K of
  // tokens on a small model), once for the product. A task then runs its rows through the K
  // blocks in order, so each element's sums keep their order (barriers cost tens of
  // microseconds under passive waiting on a VM).
  const bool whole = nt > 1 && panels == 1 && kblocks > 1 && kblocks * stride <= kWholeB;
  const std::size_t per = whole ? kblocks : 1;  // K blocks a packing phase covers
  // Otherwise two panel buffers, alternating: a K block is packed into the one the block before
  // last used, which every thread has finished with when it passed the last packing's barrier.
  // One thread reuses one (half the footprint in L3).
  static thread_local Scratch shared;  // the calling thread's; the team reads it
  float* packed = shared.get(whole ? kblocks * stride : (nt > 1 ? 2 : 1) * stride);
  // A failure (a custom stored type's decoder throwing) is kept and thrown at the end; every
  // thread still runs every loop, so that all meet at the same barriers.
  FirstError failure;
  const auto steps = [&](bool team) {
    static thread_local Scratch abuf, tbuf;
    for (std::size_t step = 0; step < panels * kblocks; step += per) {
      const std::size_t j0 = step / kblocks * nc, j1 = std::min(g.N, j0 + nc), kb0 = step % kblocks;
      const std::size_t slivers = (j1 - j0 + nr - 1) / nr;
      float* bp = whole ? packed : packed + (nt > 1 ? step % 2 : 0) * stride;
      const std::size_t chunk = (slivers + 2 * nt - 1) / (2 * nt), chunks = (slivers + chunk - 1) / chunk;
      // K block kb0 + b of the phase: its first column and length.
      const auto block = [&](std::size_t b) {
        const std::size_t k0 = (kb0 + b) * kGemmKc;
        return std::pair{k0, std::min(kGemmKc, g.K - k0)};
      };
      for_tasks(team, per * chunks, failure, [&](std::size_t t) {
        const auto [k0, kc] = block(t / chunks);
        const std::size_t s = t % chunks * chunk, n = std::min(chunk, slivers - s);
        pack_b(g, kern, j0 + s * nr, std::min(n * nr, j1 - j0 - s * nr), k0, kc, bp + t / chunks * stride + s * kc * nr);
      });
      for_tasks<false>(team, rb * runs, failure, [&](std::size_t t) {
        const std::size_t i0 = t / runs * mc, mi = std::min(mc, g.M - i0), s0 = t % runs * per_run;
        if (s0 >= slivers) return;
        float* ap = abuf.get(mc * kGemmKc);
        for (std::size_t b = 0; b < per; ++b) {
          const auto [k0, kc] = block(b);
          pack_a(g, kern, i0, mi, k0, kc, ap);
          compute_block(g, kern, ap, i0, mi, bp + b * stride, s0, std::min(slivers, s0 + per_run), j0, j1, kc,
                        k0 > 0 || g.accumulate, tbuf.get(mr * nr));
        }
      });
    }
  };
  if (nt == 1 || !team_possible()) {
    steps(false);
  } else {
#pragma omp parallel num_threads(threads)
    steps(true);
  }
  failure.rethrow();
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
  if (B.type == StoredType::custom && B.dot_lanes && B.dot_columns % 32 != 0)
    throw Error(std::string(who) + ": dot_columns " + std::to_string(B.dot_columns) + " is not a multiple of 32");
  if (B.grouped_rows && (B.type != StoredType::custom || B.grouped_type == StoredType::custom || B.row_map))
    throw Error(std::string(who) + ": grouped rows need a custom matrix of float32, f16 or bf16 elements without a row map");
}

// C (M x B.rows) = A B^T (+ C) for a stored B with rows, its decoder checked (the caller
// checks A and C, which it names in its own words).
detail::GemmF32Args stored_args(const char* who, const float* A, const StoredMatrix& B, float* C, std::size_t M,
                                bool accumulate) {
  if (B.cols > 0) check_stored(B, who);
  detail::GemmF32Args g;
  g.a = A;
  g.a_rs = B.cols;
  g.b = B;
  g.c = C;
  g.M = M;
  g.N = B.rows;
  g.K = B.cols;
  g.accumulate = accumulate;
  return g;
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
  thread_count(threads, M, B.rows, B.cols);  // checks `threads`
  if (M == 0 || B.rows == 0) return;
  if (!C || (B.cols > 0 && !A)) throw Error(std::string("gemm_f32: ") + (!C ? "C" : "A") + " is null");
  run(stored_args("gemm_f32", A, B, C, M, accumulate), threads);
}

void gemv_f32(const float* x, std::span<const StoredMatrix> B, std::span<float* const> y, int threads) {
  thread_count(threads, 1, 1, 1);  // checks `threads`
  if (B.size() != y.size())
    throw Error("gemv_f32: " + std::to_string(B.size()) + " matrices and " + std::to_string(y.size()) + " outputs");
  std::vector<detail::GemmF32Args> gs;
  std::size_t elems = 0;
  for (std::size_t i = 0; i < B.size(); ++i) {
    const StoredMatrix& b = B[i];
    if (b.cols != B[0].cols)
      throw Error("gemv_f32: matrix " + std::to_string(i) + " has " + std::to_string(b.cols) + " columns, matrix 0 " +
                  std::to_string(B[0].cols));
    if (b.rows == 0) continue;
    if (!y[i] || (b.cols > 0 && !x))
      throw Error("gemv_f32: " + std::string(!y[i] ? "output " + std::to_string(i) : std::string("x")) + " is null");
    gs.push_back(stored_args("gemv_f32", x, b, y[i], 1, false));
    elems += b.rows * b.cols;
  }
  detail::gemv_f32_run(gs, detail::gemv_f32_kernel(best_isa()), gemv_thread_count(threads, elems, 1));
}

std::size_t stored_bytes(const StoredMatrix& B) noexcept {
  if (B.type == StoredType::custom) return B.rows * B.row_bytes;
  return B.rows * B.cols * (B.type == StoredType::f32 ? 4 : 2);
}

void widen_rows(const StoredMatrix& B, std::size_t r0, std::size_t n, float* out) {
  if (r0 > B.rows || n > B.rows - r0)
    throw Error("widen_rows: rows [" + std::to_string(r0) + ", " + std::to_string(r0 + n) + ") of a matrix of " +
                std::to_string(B.rows));
  check_stored(B, "widen_rows");
  for (std::size_t r = 0; r < n; ++r) detail::widen_row(B, r0 + r, 0, B.cols, out + r * B.cols);
}

}  // namespace lowp::quant
