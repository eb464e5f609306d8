#include "train/data_parallel.hpp"

#include <algorithm>
#include <cmath>

#include "lowp/numerics/error.hpp"
#include "lowp/numerics/rng.hpp"
#include "lowp/quant/quantize.hpp"

namespace lowp::accuracy::train {
namespace {

constexpr GradComm kAll[] = {GradComm::fp32, GradComm::bf16, GradComm::e4m3, GradComm::e5m2, GradComm::mxfp8};
constexpr int kTagFloat = 7101, kTagDouble = 7102, kTagMax = 7103;

// The chain: receive from r - 1, combine own terms in order, send to r + 1; the last rank
// broadcasts the result.
template <class T, class Combine>
std::vector<T> chain(const std::vector<std::vector<T>>& terms, std::size_t n, bool distributed, int tag,
                     Combine combine) {
  const int ranks = distributed ? dist::size() : 1, me = distributed ? dist::rank() : 0;
  for (const auto& t : terms)
    if (t.size() != n) throw Error("chain_sum: a term of " + std::to_string(t.size()) + " values, not " + std::to_string(n));
  std::vector<T> run;
  std::size_t first = 0;
  if (me == 0) {
    if (terms.empty()) throw Error("chain_sum: rank 0 holds no term");
    run = terms[0];
    first = 1;
  } else {
    run.resize(n);
    dist::receive(std::span<T>(run), me - 1, tag);
  }
  for (std::size_t i = first; i < terms.size(); ++i) combine(run, terms[i]);
  if (ranks == 1) return run;
  if (me + 1 < ranks) dist::send(std::span<const T>(run), me + 1, tag);
  dist::broadcast(std::span<T>(run), ranks - 1);
  return run;
}

template <class T>
void add(std::vector<T>& run, const std::vector<T>& t) {
  for (std::size_t i = 0; i < run.size(); ++i) run[i] += t[i];
}

}  // namespace

std::uint64_t micro_batch_seed(std::uint64_t step_seed, std::size_t k) {
  if (k == 0) return step_seed;
  const RngKey key = rng_key(step_seed ^ (static_cast<std::uint64_t>(k) * 0xd1b54a32d192ed03ULL));
  return (static_cast<std::uint64_t>(key.k1) << 32) | key.k0;
}

std::vector<float> flat_grad(TrainModel& net) {
  std::vector<float> g;
  for (const auto& p : net.params()) g.insert(g.end(), p.grad, p.grad + p.size);
  return g;
}

void set_grad(TrainModel& net, std::span<const float> grad) {
  std::size_t at = 0;
  for (const auto& p : net.params()) {
    if (grad.size() - at < p.size) throw Error("set_grad: " + std::to_string(grad.size()) + " values are too few");
    std::copy_n(grad.data() + at, p.size, p.grad);
    at += p.size;
  }
  if (at != grad.size()) throw Error("set_grad: " + std::to_string(grad.size() - at) + " values too many");
}

LocalStep run_micro_batches(TrainModel& net, std::span<const int> tokens, std::span<const int> targets,
                            const MicroBatches& mb, std::uint64_t step_seed,
                            const std::function<void(const std::string& tensor)>& nonfinite) {
  const std::size_t B = mb.batch, m = mb.micro, T = mb.window;
  if (m == 0 || B % m != 0 || tokens.size() != B * T || targets.size() != B * T || mb.range.end > B / m)
    throw Error("run_micro_batches: micro-batches of " + std::to_string(m) + " do not fit a batch of " + std::to_string(B));
  LocalStep out;
  std::vector<float> own;  // the running sum
  net.collect_stats(mb.stats);
  for (std::size_t k = mb.range.begin; k < mb.range.end; ++k) {
    if (mb.stats) net.weights_changed();  // a cached weight is quantized, and counted, per micro-batch
    net.zero_grad();
    const std::uint64_t seed = micro_batch_seed(step_seed, k);
    const double loss = net.forward(tokens.subspan(k * m * T, m * T), targets.subspan(k * m * T, m * T), m, T,
                                    mb.threads, seed);
    if (!std::isfinite(loss)) {
      net.collect_stats(false);
      nonfinite(net.first_nonfinite_activation());
      throw Error("run_micro_batches: non-finite loss");
    }
    net.backward(mb.threads, seed, B * T);
    std::vector<double> d = {loss * (static_cast<double>(m) / static_cast<double>(B)), 0.0, 0.0};
    if (mb.stats)
      for (const auto& l : net.take_stats())
        for (const quant::OperandStats& op : l.ops)
          d.insert(d.end(), {static_cast<double>(op.count), static_cast<double>(op.saturated),
                             static_cast<double>(op.flushed), op.signal, op.noise});
    out.sums.push_back(std::move(d));
    std::vector<float> g = flat_grad(net);
    if (mb.keep_apart) {
      out.grads.push_back(std::move(g));
    } else if (own.empty()) {
      own = std::move(g);
    } else {
      for (std::size_t i = 0; i < own.size(); ++i) own[i] += g[i];
    }
  }
  net.collect_stats(false);
  if (!own.empty()) out.grads.push_back(std::move(own));
  return out;
}

GradComm parse_grad_comm(const std::string& name) {
  for (GradComm c : kAll)
    if (name == grad_comm_name(c)) return c;
  throw Error("unknown --grad-comm '" + name + "' (known: fp32, bf16, e4m3, e5m2, mxfp8)");
}

const char* grad_comm_name(GradComm c) {
  switch (c) {
    case GradComm::fp32: return "fp32";
    case GradComm::bf16: return "bf16";
    case GradComm::e4m3: return "e4m3";
    case GradComm::e5m2: return "e5m2";
    case GradComm::mxfp8: return "mxfp8";
  }
  return "?";
}

CommError quantize_for_comm(GradComm c, std::span<float> grad, std::span<const std::size_t> sizes) {
  CommError e;
  if (c == GradComm::fp32) return e;
  quant::QuantSpec spec = quant::parse_quant_spec(grad_comm_name(c));
  spec.pad = true;  // a tensor whose length 32 does not divide (mxfp8): its last block is short
  std::size_t at = 0;
  std::vector<float> q;
  for (const std::size_t n : sizes) {
    if (n > grad.size() - at) throw Error("quantize_for_comm: tensor sizes exceed the gradient");
    float* g = grad.data() + at;
    q.assign(g, g + n);
    quant::fake_quant(spec, q.data(), 1, n);
    for (std::size_t i = 0; i < n; ++i) {
      const double d = static_cast<double>(g[i]) - q[i];
      e.signal += static_cast<double>(g[i]) * g[i];
      e.noise += d * d;
      g[i] = q[i];
    }
    at += n;
  }
  if (at != grad.size()) throw Error("quantize_for_comm: tensor sizes do not cover the gradient");
  return e;
}

std::vector<float> chain_sum(const std::vector<std::vector<float>>& terms, std::size_t n, bool distributed) {
  return chain(terms, n, distributed, kTagFloat, add<float>);
}

std::vector<double> chain_sum(const std::vector<std::vector<double>>& terms, std::size_t n, bool distributed) {
  return chain(terms, n, distributed, kTagDouble, add<double>);
}

std::vector<float> max_over_ranks(std::vector<float> values, bool distributed) {
  const std::size_t n = values.size();
  return chain(std::vector<std::vector<float>>{std::move(values)}, n, distributed, kTagMax,
               [](std::vector<float>& run, const std::vector<float>& t) {
                 for (std::size_t i = 0; i < run.size(); ++i)
                   if (std::isnan(t[i]) || t[i] > run[i]) run[i] = std::isnan(run[i]) ? run[i] : t[i];
               });
}

}  // namespace lowp::accuracy::train
