// Causal GQA attention. Each (sequence, head) is one job on an OpenMP thread; inside it the
// queries go in blocks of kBlock rows: a block's scores against the keys up to its last row are
// one GEMM (the causal upper triangle beyond the block is never computed), its softmax is fused
// on that block (scale, max, exp, sum, normalize in one place), and its output is one GEMM with
// V. The backward takes the same blocks from the kept P. Every GEMM is gemm_f32 on one thread
// and every sum has a fixed order, so the bits do not depend on the thread count.
//
// Evaluation's attn.p hook needs a head's whole P before P V, so with a hook the job computes all
// T x T scores at once; the softmax is the same function either way.
#include "model/attention.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "lowp/numerics/cpu.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/numerics/parallel.hpp"
#include "lowp/quant/gemm.hpp"
#include "model/llama.hpp"
#include "model/softmax_avx512.hpp"
#include "model/softmax_loops.hpp"

namespace lowp::accuracy::detail {
namespace {

constexpr std::size_t kBlock = 48;  // query rows per block (a multiple of the GEMM kernels' 12 and 6 rows)

// Where the block of query rows starting at i0 starts in a job's kept P (blocks of kBlock rows x
// the keys they see, one after another: kBlock^2 (1 + 2 + ... + i0 / kBlock) floats precede it).
std::size_t block_offset(std::size_t i0) {
  const std::size_t b = i0 / kBlock;
  return kBlock * kBlock * b * (b + 1) / 2;
}

// Runs f(job) for job in [0, n) on `threads` threads; the first exception is rethrown after.
// `macs`, the multiply-adds of all the jobs, decides whether a team is worth waking: a decode
// step's one query row per head is a few microseconds of work, less than the team costs.
constexpr std::size_t kTeamMacs = std::size_t{1} << 18;
template <class F>
void parallel_jobs(std::size_t n, int threads, std::size_t macs, F f) {
  FirstError err;
  if (threads <= 0) threads = omp_get_max_threads();
  threads = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(threads), std::max<std::size_t>(n, 1)));
  const auto run = [&](auto& state, std::size_t j) { err.run([&] { f(state, j); }); };
  if (threads > 1 && n > 1 && use_team(macs, kTeamMacs)) {
#pragma omp parallel num_threads(threads)
    {
      auto state = f.make_state();
#pragma omp for schedule(dynamic, 1) nowait
      for (std::ptrdiff_t j = 0; j < static_cast<std::ptrdiff_t>(n); ++j) run(state, static_cast<std::size_t>(j));
    }
  } else {
    auto state = f.make_state();
    for (std::size_t j = 0; j < n; ++j) run(state, j);
  }
  err.rethrow();
}

// Copies head `h` of rows [r0, r0 + T) (row stride `stride`) into a dense T x hd block, and back.
void gather_head(const float* x, std::size_t stride, std::size_t r0, std::size_t T, std::size_t h, std::size_t hd,
                 float* out) {
  for (std::size_t t = 0; t < T; ++t) std::copy_n(x + (r0 + t) * stride + h * hd, hd, out + t * hd);
}
void scatter_head(const float* in, std::size_t stride, std::size_t r0, std::size_t T, std::size_t h, std::size_t hd,
                  float* x) {
  for (std::size_t t = 0; t < T; ++t) std::copy_n(in + t * hd, hd, x + (r0 + t) * stride + h * hd);
}

// sum_j a[j] b[j] over [0, n) in kLanes lanes.
float dot(const float* a, const float* b, std::size_t n) {
  float acc[kLanes] = {};
  const std::size_t body = n / kLanes * kLanes;
  for (std::size_t j = 0; j < body; j += kLanes)
    for (std::size_t l = 0; l < kLanes; ++l) acc[l] += a[j + l] * b[j + l];
  for (std::size_t j = body; j < n; ++j) acc[j - body] += a[j] * b[j];
  return combine(acc);
}

// The query-side rows of the `group` heads g*group.. of sequence b, stacked block by block: block
// [i0, i1) holds head 0's rows i0..i1-1, then head 1's, ... (group * (i1 - i0) rows of hd), so that
// a block of all the heads reading one KV head is one GEMM operand.
void gather_group(const float* x, std::size_t stride, std::size_t r0, std::size_t T, std::size_t h0, std::size_t group,
                  std::size_t hd, float* out) {
  for (std::size_t i0 = 0; i0 < T; i0 += kBlock) {
    const std::size_t m = std::min(T, i0 + kBlock) - i0;
    for (std::size_t j = 0; j < group; ++j) gather_head(x + i0 * stride, stride, r0, m, h0 + j, hd, out + (i0 * group + j * m) * hd);
  }
}
void scatter_group(const float* in, std::size_t stride, std::size_t r0, std::size_t T, std::size_t h0, std::size_t group,
                   std::size_t hd, float* x) {
  for (std::size_t i0 = 0; i0 < T; i0 += kBlock) {
    const std::size_t m = std::min(T, i0 + kBlock) - i0;
    for (std::size_t j = 0; j < group; ++j) scatter_head(in + (i0 * group + j * m) * hd, stride, r0, m, h0 + j, hd, x + i0 * stride);
  }
}

}  // namespace

float softmax_row(float* s, std::size_t n, float scale, bool normalize, Isa isa) {
  return isa == Isa::avx512 ? softmax_row_avx512(s, n, scale, normalize) : softmax_row_values(s, n, scale, normalize);
}

float softmax_row(float* s, std::size_t n, float scale, bool normalize) {
  return softmax_row(s, n, scale, normalize, best_isa());
}

float p_row(float* s, std::size_t n, float scale, bool fa3) {
  const float sum = softmax_row(s, n, scale, !fa3);
  if (!fa3) return 1.0f;
  for (std::size_t j = 0; j < n; ++j) s[j] *= kFa3POffset;  // exact power-of-two scaling
  return sum * kFa3POffset;
}

void fa3_finalize(float* o, std::size_t rows, std::size_t hd, const float* divisor) {
  for (std::size_t r = 0; r < rows; ++r) {
    const float inv = 1.0f / divisor[r];
    for (std::size_t d = 0; d < hd; ++d) o[r * hd + d] *= inv;
  }
}

namespace {

// Where attend() reads K (or V): row t of KV head g of sequence b at
// base + b * seq_stride + g * head_stride + t * row_stride.
struct KvView {
  const float* base;
  std::size_t row_stride, head_stride, seq_stride;
};

// KV head g of sequence b, rows [0, n), as a dense n x hd block: in place when its rows are
// dense already (a KV cache), else gathered into `scratch`.
const float* kv_head(const KvView& x, std::size_t b, std::size_t g, std::size_t n, std::size_t hd,
                     std::vector<float>& scratch) {
  const float* h = x.base + b * x.seq_stride + g * x.head_stride;
  if (x.row_stride == hd) return h;
  for (std::size_t t = 0; t < n; ++t) std::copy_n(h + t * x.row_stride, hd, scratch.data() + t * hd);
  return scratch.data();
}

// attention_forward and attention_cached: s.T query rows per sequence at positions pos0.., keys
// [0, pos0 + s.T) (P kept only from pos0 = 0).
void attend(const AttentionShape& s, std::size_t pos0, const float* q, const KvView& k, const KvView& v, float* out,
            float* p, int threads, const AttentionP& pq) {
  const std::size_t T = s.T, Tk = pos0 + T, hd = s.head_dim, heads = s.heads, kvh = s.kv_heads,
                    group = s.heads / s.kv_heads;
  const std::size_t qd = heads * hd, gather = k.row_stride == hd ? 0 : Tk * hd;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  if (!pq.quantize) {
    // Job: one (sequence, KV head) with its group of heads. Query block [i0, i1) of all of them
    // (G = group * (i1 - i0) stacked rows) sees keys [0, pos0 + i1):
    //   S_b = Q_b K^T (G x (pos0 + i1)), P_b = causal softmax per row, O_b = P_b V;
    // P_b is computed where it is kept (or in a scratch).
    struct Scratch {
      std::vector<float> qg, kh, vh, og, s;
    };
    struct Job {
      std::size_t T, pos0, Tk, hd, kvh, group, qd, gather;
      float scale;
      const float* q;
      KvView k, v;
      float *out, *p;
      Scratch make_state() const {
        return Scratch{std::vector<float>(group * T * hd), std::vector<float>(gather), std::vector<float>(gather),
                       std::vector<float>(group * T * hd),
                       std::vector<float>(p ? 0 : group * std::min(kBlock, T) * Tk)};
      }
      void operator()(Scratch& w, std::size_t job) const {
        const std::size_t b = job / kvh, g = job % kvh;
        gather_group(q, qd, b * T, T, g * group, group, hd, w.qg.data());
        const float* kh = kv_head(k, b, g, Tk, hd, w.kh);
        const float* vh = kv_head(v, b, g, Tk, hd, w.vh);
        for (std::size_t i0 = 0; i0 < T; i0 += kBlock) {
          const std::size_t i1 = std::min(T, i0 + kBlock), m = i1 - i0, G = group * m, n1 = pos0 + i1;
          float* S = p ? p + job * group * T * T + group * block_offset(i0) : w.s.data();
          quant::gemm_f32(w.qg.data() + group * i0 * hd, kh, S, G, n1, hd, false, 1);
          for (std::size_t r = 0; r < G; ++r) {
            float* row = S + r * n1;
            const std::size_t n = pos0 + i0 + r % m + 1;
            softmax_row(row, n, scale, true);
            std::fill(row + n, row + n1, 0.0f);
          }
          quant::gemm_f32(S, quant::Layout::as_is, vh, quant::Layout::transposed, w.og.data() + group * i0 * hd, G, hd,
                          n1, false, 1);
        }
        scatter_group(w.og.data(), qd, b * T, T, g * group, group, hd, out);
      }
    };
    parallel_jobs(s.B * kvh, threads, 2 * s.B * heads * T * Tk * hd,
                  Job{T, pos0, Tk, hd, kvh, group, qd, gather, scale, q, k, v, out, p});
    return;
  }
  // With evaluation's hook: per (sequence, head) all of P (the hook sees it whole), then O = P V.
  if (p) throw Error("attention_forward: P is not kept under an attn.p hook (evaluation only)");
  const bool fa3 = pq.fa3;
  struct Scratch {
    std::vector<float> qh, kh, vh, oh, s, row_sum;
  };
  struct Job {
    std::size_t T, pos0, Tk, hd, heads, group, qd, gather;
    float scale;
    bool fa3;
    const float* q;
    KvView k, v;
    float* out;
    const AttentionP& pq;
    Scratch make_state() const {
      const std::size_t n = T * hd;
      return Scratch{std::vector<float>(n), std::vector<float>(gather), std::vector<float>(gather),
                     std::vector<float>(n), std::vector<float>(T * Tk), std::vector<float>(fa3 ? T : 0)};
    }
    void operator()(Scratch& w, std::size_t job) const {
      const std::size_t b = job / heads, h = job % heads, g = h / group;
      gather_head(q, qd, b * T, T, h, hd, w.qh.data());
      const float* kh = kv_head(k, b, g, Tk, hd, w.kh);
      const float* vh = kv_head(v, b, g, Tk, hd, w.vh);
      float* P = w.s.data();
      quant::gemm_f32(w.qh.data(), kh, P, T, Tk, hd, false, 1);  // S = Q K^T
      for (std::size_t i = 0; i < T; ++i) {
        float* row = P + i * Tk;
        const std::size_t n = pos0 + i + 1;
        const float divisor = p_row(row, n, scale, fa3);
        if (fa3) w.row_sum[i] = divisor;
        std::fill(row + n, row + Tk, 0.0f);
      }
      pq.quantize(job, P);
      quant::gemm_f32(P, quant::Layout::as_is, vh, quant::Layout::transposed, w.oh.data(), T, hd, Tk, false,
                      1);  // O = P V
      if (fa3) fa3_finalize(w.oh.data(), T, hd, w.row_sum.data());
      scatter_head(w.oh.data(), qd, b * T, T, h, hd, out);
    }
  };
  parallel_jobs(s.B * heads, threads, 2 * s.B * heads * T * Tk * hd,
                Job{T, pos0, Tk, hd, heads, group, qd, gather, scale, fa3, q, k, v, out, pq});
}

}  // namespace

void attention_forward(const AttentionShape& s, const float* q, const float* k, const float* v, float* out, float* p,
                       int threads, const AttentionP& pq) {
  const std::size_t kvd = s.kv_heads * s.head_dim;
  attend(s, 0, q, KvView{k, kvd, s.head_dim, s.T * kvd}, KvView{v, kvd, s.head_dim, s.T * kvd}, out, p, threads, pq);
}

void attention_cached(const AttentionShape& s, std::size_t pos0, const float* q, const KvLayer& cache, float* out,
                      int threads, const AttentionP& pq) {
  const std::size_t hd = s.head_dim, head = cache.capacity * hd;
  if (s.B != 1 || pos0 + s.T > cache.capacity)
    throw Error("attention_cached: " + std::to_string(s.B) + " sequences of positions " + std::to_string(pos0) + ".." +
                std::to_string(pos0 + s.T) + " over a cache of " + std::to_string(cache.capacity));
  attend(s, pos0, q, KvView{cache.k, hd, head, 0}, KvView{cache.v, hd, head, 0}, out, nullptr, threads, pq);
}

void attention_backward(const AttentionShape& s, const float* q, const float* k, const float* v, const float* p,
                        const float* dout, float* dq, float* dk, float* dv, int threads) {
  struct Scratch {
    std::vector<float> qg, kh, vh, dog, dqg, dkh, dvh, dp;
  };
  struct Job {
    std::size_t T, hd, heads, kvh, group, qd, kvd;
    float scale;
    const float *q, *k, *v, *p, *dout;
    float *dq, *dk, *dv;
    Scratch make_state() const {
      const std::size_t n = T * hd, gn = group * n;
      return Scratch{std::vector<float>(gn), std::vector<float>(n),  std::vector<float>(n), std::vector<float>(gn),
                     std::vector<float>(gn), std::vector<float>(n),  std::vector<float>(n),
                     std::vector<float>(group * kBlock * T)};
    }
    // Job: one (sequence, KV head) and its group of heads, query block by query block as the
    // forward stacked them (G rows), each adding into dK, dV rows [0, i1):
    //   dP_b = dO_b V^T; dV += P_b^T dO_b; dS_b = P_b (dP_b - rowsum(dP_b P_b)) / sqrt(hd);
    //   dQ_b = dS_b K; dK += dS_b^T Q_b.
    void operator()(Scratch& w, std::size_t job) const {
      using quant::Layout;
      const std::size_t b = job / kvh, g = job % kvh;
      gather_head(k, kvd, b * T, T, g, hd, w.kh.data());
      gather_head(v, kvd, b * T, T, g, hd, w.vh.data());
      gather_group(q, qd, b * T, T, g * group, group, hd, w.qg.data());
      gather_group(dout, qd, b * T, T, g * group, group, hd, w.dog.data());
      std::fill(w.dkh.begin(), w.dkh.end(), 0.0f);
      std::fill(w.dvh.begin(), w.dvh.end(), 0.0f);
      const float* P = p + job * group * T * T;
      for (std::size_t i0 = 0; i0 < T; i0 += kBlock) {
        const std::size_t i1 = std::min(T, i0 + kBlock), m = i1 - i0, G = group * m;
        const float* pb = P + group * block_offset(i0);
        float* dp = w.dp.data();
        const float* dob = w.dog.data() + group * i0 * hd;
        const float* qb = w.qg.data() + group * i0 * hd;
        quant::gemm_f32(dob, w.vh.data(), dp, G, i1, hd, false, 1);                                       // dP_b
        quant::gemm_f32(pb, Layout::transposed, dob, Layout::transposed, w.dvh.data(), i1, hd, G, true, 1);  // dV
        for (std::size_t r = 0; r < G; ++r) {
          const std::size_t n = i0 + r % m + 1;
          const float* pr = pb + r * i1;
          float* dr = dp + r * i1;
          const float rs = dot(pr, dr, n);
          for (std::size_t j = 0; j < n; ++j) dr[j] = pr[j] * (dr[j] - rs) * scale;
          std::fill(dr + n, dr + i1, 0.0f);
        }
        quant::gemm_f32(dp, Layout::as_is, w.kh.data(), Layout::transposed, w.dqg.data() + group * i0 * hd, G, hd, i1,
                        false, 1);                                                                         // dQ_b
        quant::gemm_f32(dp, Layout::transposed, qb, Layout::transposed, w.dkh.data(), i1, hd, G, true, 1);  // dK
      }
      scatter_group(w.dqg.data(), qd, b * T, T, g * group, group, hd, dq);
      scatter_head(w.dkh.data(), kvd, b * T, T, g, hd, dk);
      scatter_head(w.dvh.data(), kvd, b * T, T, g, hd, dv);
    }
  };
  const std::size_t hd = s.head_dim;
  parallel_jobs(s.B * s.kv_heads, threads, 4 * s.B * s.heads * s.T * s.T * hd,
                Job{s.T, hd, s.heads, s.kv_heads, s.heads / s.kv_heads, s.heads * hd, s.kv_heads * hd,
                    1.0f / std::sqrt(static_cast<float>(hd)), q, k, v, p, dout, dq, dk, dv});
}

}  // namespace lowp::accuracy::detail
