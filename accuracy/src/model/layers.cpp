#include "model/layers.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "lowp/numerics/error.hpp"
#include "lowp/numerics/cpu.hpp"
#include "lowp/numerics/parallel.hpp"
#include "model/exp.hpp"
#include "model/swiglu_avx512.hpp"
#include "model/swiglu_loops.hpp"

namespace lowp::accuracy::detail {
namespace {

// The team for `rows` independent rows of `elements` in all: never more threads than rows (a
// team of 1024 for a few rows only costs thread start-ups, and libomp keeps some of each
// thread's state to exit), and one thread below 2^15 elements (a decode step's one row is a few
// microseconds of work, less than waking a team costs).
int team(int threads, std::size_t rows, std::size_t elements) {
  const int t = team_size(elements, std::size_t{1} << 15, threads);
  return static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(t), std::max<std::size_t>(rows, 1)));
}

// sum_i a[i] b[i] (c[i]) in double over 8 lanes (lane i % 8), combined in a fixed tree: the
// same bits at any thread count, without the latency of one chain of additions.
template <bool kThree>
double dot_lanes(const float* a, const float* b, const float* c, std::size_t n) {
  double l[8] = {};
  const auto term = [&](std::size_t i) {
    const double ab = static_cast<double>(a[i]) * b[i];
    if constexpr (kThree) return ab * c[i];
    return ab;
  };
  const std::size_t body = n / 8 * 8;
  for (std::size_t i = 0; i < body; i += 8)
    for (std::size_t j = 0; j < 8; ++j) l[j] += term(i + j);
  for (std::size_t i = body; i < n; ++i) l[i - body] += term(i);
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}
}  // namespace

float silu(float x) { return silu_inline(x); }
void check_batch(std::span<const int> tokens, std::span<const int> targets, std::size_t B, std::size_t T,
                 std::size_t seq_len, std::size_t vocab, const char* what) {
  const std::string w(what);
  if (B == 0 || T == 0 || tokens.size() != B * T || (!targets.empty() && targets.size() != B * T))
    throw Error(w + ": " + std::to_string(tokens.size()) + " tokens for batch " + std::to_string(B) + " x window " +
                std::to_string(T));
  if (T > seq_len) throw Error(w + ": window " + std::to_string(T) + " is beyond seq_len " + std::to_string(seq_len));
  for (int t : tokens)
    if (t < 0 || static_cast<std::size_t>(t) >= vocab)
      throw Error(w + ": token " + std::to_string(t) + " outside the vocabulary of " + std::to_string(vocab));
  for (int y : targets)
    if (y < 0 || static_cast<std::size_t>(y) >= vocab)
      throw Error(w + ": target " + std::to_string(y) + " outside the vocabulary of " + std::to_string(vocab));
}

void embedding_forward(float* out, const quant::StoredMatrix& table, std::span<const int> tokens) {
  for (std::size_t r = 0; r < tokens.size(); ++r)
    quant::widen_rows(table, static_cast<std::size_t>(tokens[r]), 1, out + r * table.cols);
}

void embedding_backward(float* dtable, const float* dout, std::span<const int> tokens, std::size_t dim) {
  for (std::size_t r = 0; r < tokens.size(); ++r) {
    float* d = dtable + static_cast<std::size_t>(tokens[r]) * dim;
    for (std::size_t i = 0; i < dim; ++i) d[i] += dout[r * dim + i];
  }
}

void rmsnorm_forward(float* out, float* inv, const float* x, const float* w, std::size_t rows, std::size_t dim,
                     float eps, int threads) {
  parallel_for(rows, team(threads, rows, rows * dim), [&](std::size_t t) {
    const float* xr = x + t * dim;
    const double ss = dot_lanes<false>(xr, xr, nullptr, dim);
    const auto r = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(dim) + eps));
    if (inv) inv[t] = r;
    for (std::size_t i = 0; i < dim; ++i) out[t * dim + i] = w[i] * (xr[i] * r);
  });
}

void rmsnorm_backward(float* dx, float* dw, const float* dout, const float* x, const float* w, const float* inv,
                      std::size_t rows, std::size_t dim, int threads) {
  parallel_for(rows, team(threads, rows, rows * dim), [&](std::size_t t) {
    const float* xr = x + t * dim;
    const float* g = dout + t * dim;
    const double dot = dot_lanes<true>(w, g, xr, dim);
    const double r = inv[t], c = dot * r * r * r / static_cast<double>(dim);
    for (std::size_t i = 0; i < dim; ++i) dx[t * dim + i] += static_cast<float>(r * w[i] * g[i] - c * xr[i]);
  });
  // Rows in order (the same at any thread count), a whole row at a time: reading down the
  // columns instead would stream both matrices once per column.
  std::vector<double> acc(dim, 0.0);
  for (std::size_t t = 0; t < rows; ++t)
    for (std::size_t i = 0; i < dim; ++i) acc[i] += static_cast<double>(dout[t * dim + i]) * x[t * dim + i] * inv[t];
  for (std::size_t i = 0; i < dim; ++i) dw[i] += static_cast<float>(acc[i]);
}

void rope_tables(const LlamaConfig& c, std::size_t positions, std::vector<float>& cos_table,
                 std::vector<float>& sin_table) {
  const auto hd = static_cast<std::size_t>(c.head_dim());
  const std::size_t half = hd / 2;
  cos_table.resize(positions * half);
  sin_table.resize(positions * half);
  for (std::size_t pos = 0; pos < positions; ++pos)
    for (std::size_t i = 0; i < half; ++i) {
      double freq = std::pow(static_cast<double>(c.rope_theta), -static_cast<double>(2 * i) / static_cast<double>(hd)) *
                    static_cast<double>(c.rope_freq_scale);
      if (!c.rope_freq_factors.empty()) freq /= static_cast<double>(c.rope_freq_factors[i]);
      const double angle = static_cast<double>(pos) * freq;
      cos_table[pos * half + i] = static_cast<float>(std::cos(angle));
      sin_table[pos * half + i] = static_cast<float>(std::sin(angle));
    }
}

void rope_forward(float* x, const float* cos_table, const float* sin_table, std::size_t B, std::size_t T,
                  std::size_t heads, std::size_t head_dim) {
  const std::size_t half = head_dim / 2;
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t h = 0; h < heads; ++h) {
        float* v = x + ((b * T + t) * heads + h) * head_dim;
        for (std::size_t i = 0; i < half; ++i) {
          const float c = cos_table[t * half + i], s = sin_table[t * half + i];
          const float a = v[2 * i], bb = v[2 * i + 1];
          v[2 * i] = a * c - bb * s;
          v[2 * i + 1] = a * s + bb * c;
        }
      }
}

// (da, db) = (dv0 c + dv1 s, -dv0 s + dv1 c).
void rope_backward(float* dx, const float* cos_table, const float* sin_table, std::size_t B, std::size_t T,
                   std::size_t heads, std::size_t head_dim) {
  const std::size_t half = head_dim / 2;
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t h = 0; h < heads; ++h) {
        float* v = dx + ((b * T + t) * heads + h) * head_dim;
        for (std::size_t i = 0; i < half; ++i) {
          const float c = cos_table[t * half + i], s = sin_table[t * half + i];
          const float d0 = v[2 * i], d1 = v[2 * i + 1];
          v[2 * i] = d0 * c + d1 * s;
          v[2 * i + 1] = -d0 * s + d1 * c;
        }
      }
}

void bias_forward(float* y, const float* b, std::size_t rows, std::size_t n) {
  for (std::size_t t = 0; t < rows; ++t)
    for (std::size_t i = 0; i < n; ++i) y[t * n + i] += b[i];
}

void bias_backward(float* db, const float* dy, std::size_t rows, std::size_t n) {
  std::vector<double> acc(n, 0.0);
  for (std::size_t t = 0; t < rows; ++t)
    for (std::size_t i = 0; i < n; ++i) acc[i] += dy[t * n + i];
  for (std::size_t i = 0; i < n; ++i) db[i] += static_cast<float>(acc[i]);
}

void residual_forward(float* x, const float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) x[i] += y[i];
}

void swiglu_forward(float* h, const float* g, const float* u, std::size_t rows, std::size_t hidden,
                    std::size_t stride, int threads) {
  swiglu_forward(h, g, u, rows, hidden, stride, threads, best_isa());
}

void swiglu_forward(float* h, const float* g, const float* u, std::size_t rows, std::size_t hidden,
                    std::size_t stride, int threads, Isa isa) {
  const auto values = isa == Isa::avx512 ? swiglu_forward_values_avx512 : swiglu_forward_values;
  parallel_for(rows, team(threads, rows, rows * hidden),
               [&](std::size_t t) { values(h + t * hidden, g + t * stride, u + t * stride, hidden); });
}

void swiglu_backward(float* dg, float* du, const float* dh, const float* g, const float* u, std::size_t n,
                     int threads) {
  swiglu_backward(dg, du, dh, g, u, n, threads, best_isa());
}

// Runs of 4096 values a thread.
void swiglu_backward(float* dg, float* du, const float* dh, const float* g, const float* u, std::size_t n,
                     int threads, Isa isa) {
  constexpr std::size_t kRun = 4096;
  const std::size_t runs = (n + kRun - 1) / kRun;
  const auto values = isa == Isa::avx512 ? swiglu_backward_values_avx512 : swiglu_backward_values;
  parallel_for(runs, team(threads, runs, n), [&](std::size_t r) {
    const std::size_t i = r * kRun, m = std::min(kRun, n - i);
    values(dg + i, du + i, dh + i, g + i, u + i, m);
  });
}

double crossentropy_forward(const float* logits, const int* targets, std::size_t rows, std::size_t vocab,
                            double* sums) {
  double total = 0;
  std::vector<float> e(vocab);  // a row's exps: one vectorized loop, then summed in order
  for (std::size_t r = 0; r < rows; ++r) {
    const float* row = logits + r * vocab;
    const float mx = *std::max_element(row, row + vocab);
    for (std::size_t j = 0; j < vocab; ++j) e[j] = exp_nonpositive(row[j] - mx);
    double se = 0;
    for (std::size_t j = 0; j < vocab; ++j) se += e[j];
    sums[r] = se;
    total += std::log(se) + mx - row[targets[r]];
  }
  return total;
}

void crossentropy_backward(float* logits, const double* sums, const int* targets, std::size_t rows, std::size_t vocab,
                           double loss_rows, int threads) {
  parallel_for(rows, team(threads, rows, rows * vocab), [&](std::size_t r) {
    float* row = logits + r * vocab;
    const float mx = *std::max_element(row, row + vocab);
    const double se = sums[r];  // the forward's, summed exactly so
    for (std::size_t j = 0; j < vocab; ++j) {
      const double p = exp_nonpositive(row[j] - mx) / se;
      row[j] = static_cast<float>((p - (static_cast<int>(j) == targets[r] ? 1.0 : 0.0)) / loss_rows);
    }
  });
}

}  // namespace lowp::accuracy::detail
