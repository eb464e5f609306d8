// Causal GQA attention, head by head: each (sequence, head) is one job of two small GEMMs and a
// scalar softmax; OpenMP runs the jobs, each GEMM single-threaded (gemm_f32's bits do not depend
// on its thread count, so neither do these).
#include "model/attention.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <mutex>
#include <vector>

#include "lowp/quant/gemm.hpp"
#include "model/llama.hpp"

namespace lowp::accuracy::detail {
namespace {

// Runs f(job) for job in [0, n) on `threads` threads; the first exception is rethrown after.
template <class F>
void parallel_jobs(std::size_t n, int threads, F f) {
  std::exception_ptr err;
  std::mutex mu;
  if (threads <= 0) threads = omp_get_max_threads();
#pragma omp parallel num_threads(threads)
  {
    auto state = f.make_state();
#pragma omp for schedule(dynamic, 1)
    for (std::ptrdiff_t j = 0; j < static_cast<std::ptrdiff_t>(n); ++j) {
      try {
        f(state, static_cast<std::size_t>(j));
      } catch (...) {
        const std::lock_guard<std::mutex> lock(mu);
        if (!err) err = std::current_exception();
      }
    }
  }
  if (err) std::rethrow_exception(err);
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

struct ForwardScratch {
  std::vector<float> qh, kh, vh, oh, p, row_sum;
};

}  // namespace

void attention_forward(const AttentionShape& s, const float* q, const float* k, const float* v, float* out, float* p,
                       int threads, const AttentionP& pq) {
  const std::size_t T = s.T, hd = s.head_dim, heads = s.heads, group = s.heads / s.kv_heads;
  const std::size_t qd = heads * hd, kvd = s.kv_heads * hd;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const bool fa3 = pq.quantize && pq.fa3;
  struct Job {
    const AttentionShape& s;
    std::size_t T, hd, heads, group, qd, kvd;
    float scale;
    bool fa3;
    const float *q, *k, *v;
    float *out, *p;
    const AttentionP& pq;
    ForwardScratch make_state() const {
      ForwardScratch w{std::vector<float>(T * hd), std::vector<float>(T * hd), std::vector<float>(T * hd),
                       std::vector<float>(T * hd), {}, {}};
      if (!p) w.p.resize(T * T);
      if (fa3) w.row_sum.resize(T);
      return w;
    }
    void operator()(ForwardScratch& w, std::size_t job) const {
      const std::size_t b = job / heads, h = job % heads, g = h / group;
      gather_head(q, qd, b * T, T, h, hd, w.qh.data());
      gather_head(k, kvd, b * T, T, g, hd, w.kh.data());
      gather_head(v, kvd, b * T, T, g, hd, w.vh.data());
      float* P = p ? p + job * T * T : w.p.data();
      quant::gemm_f32(w.qh.data(), w.kh.data(), P, T, T, hd, false, 1);  // S = Q K^T
      for (std::size_t i = 0; i < T; ++i) {
        float* row = P + i * T;
        float mx = -INFINITY;
        for (std::size_t j = 0; j <= i; ++j) mx = std::max(mx, row[j] *= scale);
        float sum = 0;
        for (std::size_t j = 0; j <= i; ++j) sum += row[j] = std::exp(row[j] - mx);
        if (fa3) {  // 2^8 exp(S - rowmax): exact power-of-two scaling, divided out below
          for (std::size_t j = 0; j <= i; ++j) row[j] *= kFa3POffset;
          w.row_sum[i] = sum * kFa3POffset;
        } else {
          for (std::size_t j = 0; j <= i; ++j) row[j] /= sum;
        }
        std::fill(row + i + 1, row + T, 0.0f);
      }
      if (pq.quantize) pq.quantize(job, P);
      quant::gemm_f32(P, quant::Layout::as_is, w.vh.data(), quant::Layout::transposed, w.oh.data(), T, hd, T, false,
                      1);  // O = P V
      if (fa3)
        for (std::size_t t = 0; t < T; ++t) {  // as FA3's finalize: O times 1 / row sum
          const float inv = 1.0f / w.row_sum[t];
          for (std::size_t d = 0; d < hd; ++d) w.oh[t * hd + d] *= inv;
        }
      scatter_head(w.oh.data(), qd, b * T, T, h, hd, out);
    }
  };
  parallel_jobs(s.B * heads, threads, Job{s, T, hd, heads, group, qd, kvd, scale, fa3, q, k, v, out, p, pq});
}

void attention_backward(const AttentionShape& s, const float* q, const float* k, const float* v, const float* p,
                        const float* dout, float* dq, float* dk, float* dv, int threads) {
  struct Scratch {
    std::vector<float> qh, kh, vh, doh, dp, dqh, dkh, dvh;
  };
  struct Job {
    std::size_t T, hd, heads, kvh, group, qd, kvd;
    float scale;
    const float *q, *k, *v, *p, *dout;
    float *dq, *dk, *dv;
    Scratch make_state() const {
      const std::size_t n = T * hd;
      return Scratch{std::vector<float>(n), std::vector<float>(n), std::vector<float>(n), std::vector<float>(n),
                     std::vector<float>(T * T), std::vector<float>(n), std::vector<float>(n), std::vector<float>(n)};
    }
    // Job: one (sequence, KV head) and the heads reading it, in head order.
    void operator()(Scratch& w, std::size_t job) const {
      using quant::Layout;
      const std::size_t b = job / kvh, g = job % kvh;
      gather_head(k, kvd, b * T, T, g, hd, w.kh.data());
      gather_head(v, kvd, b * T, T, g, hd, w.vh.data());
      std::fill(w.dkh.begin(), w.dkh.end(), 0.0f);
      std::fill(w.dvh.begin(), w.dvh.end(), 0.0f);
      for (std::size_t h = g * group; h < (g + 1) * group; ++h) {
        gather_head(q, qd, b * T, T, h, hd, w.qh.data());
        gather_head(dout, qd, b * T, T, h, hd, w.doh.data());
        const float* P = p + (b * heads + h) * T * T;
        quant::gemm_f32(w.doh.data(), w.vh.data(), w.dp.data(), T, T, hd, false, 1);  // dP = dO V^T
        quant::gemm_f32(P, Layout::transposed, w.doh.data(), Layout::transposed, w.dvh.data(), T, hd, T, true,
                        1);  // dV += P^T dO
        for (std::size_t i = 0; i < T; ++i) {  // dS
          const float* pr = P + i * T;
          float* dr = w.dp.data() + i * T;
          double rs = 0;
          for (std::size_t j = 0; j <= i; ++j) rs += static_cast<double>(pr[j]) * dr[j];
          for (std::size_t j = 0; j < T; ++j) dr[j] = j <= i ? static_cast<float>(pr[j] * (dr[j] - rs) * scale) : 0.0f;
        }
        quant::gemm_f32(w.dp.data(), Layout::as_is, w.kh.data(), Layout::transposed, w.dqh.data(), T, hd, T, false,
                        1);  // dQ = dS K
        quant::gemm_f32(w.dp.data(), Layout::transposed, w.qh.data(), Layout::transposed, w.dkh.data(), T, hd, T,
                        true, 1);  // dK += dS^T Q
        scatter_head(w.dqh.data(), qd, b * T, T, h, hd, dq);
      }
      scatter_head(w.dkh.data(), kvd, b * T, T, g, hd, dk);
      scatter_head(w.dvh.data(), kvd, b * T, T, g, hd, dv);
    }
  };
  const std::size_t hd = s.head_dim;
  parallel_jobs(s.B * s.kv_heads, threads,
                Job{s.T, hd, s.heads, s.kv_heads, s.heads / s.kv_heads, s.heads * hd, s.kv_heads * hd,
                    1.0f / std::sqrt(static_cast<float>(hd)), q, k, v, p, dout, dq, dk, dv});
}

}  // namespace lowp::accuracy::detail
