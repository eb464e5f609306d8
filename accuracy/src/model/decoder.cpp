// The decode step (lowp/accuracy/decoder.hpp): one token through the Llama, its K and V
// appended to a cache that the attention reads. Each layer is forward_window's block
// (model/block.hpp) on one row at its position, so it gives the bits that row has in a window:
// gemm_f32 sums every output element the same way whatever M and N (and P V's extra zero
// terms in a longer window add exact zeros).
//
// Every quantization point acts where evaluation's does. When each point's groups stay inside
// one token (per token, per head and token, blocks along the row, or no scale: kv4's cache,
// per-token or MX linear inputs), evaluation of a prefix gives its earlier tokens the values
// they had in the shorter prefixes, and the cache holds exactly what evaluation's holds (the
// quantized K and V). When a point's scale spans tokens (fp8-attn's per-tensor Q, K, V;
// fp8-tensorwise's per-tensor linear inputs; NVFP4's tensor level), evaluation of the prefix
// quantizes with the amax of every token so far, and that changes the earlier tokens'
// attention outputs, hence their K and V in every later layer: keeping the float K/V and
// quantizing with the current amax would still differ from evaluation from layer 1 on. So
// the decoder re-runs the prefix there (forward_window, as generation did before the cache).
// A static scale (act.scale / attn.scale = static) is fixed by calibration, not by the
// window: those points are token-local again and the cache holds.
#include "lowp/accuracy/decoder.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "lowp/accuracy/memory.hpp"
#include "lowp/numerics/error.hpp"
#include "model/block.hpp"
#include "model/calibration_cache.hpp"
#include "model/llama.hpp"

namespace lowp::accuracy {
namespace {

using detail::LinearGroup;
using detail::PreparedLayer;
using detail::PreparedModel;
using quant::QuantSpec;

// True when quantizing one token's row alone gives what quantizing a window of rows gives it,
// at the point `point` of pm's recipe.
bool token_local(const PreparedModel& pm, const std::optional<QuantSpec>& s, const std::string& point) {
  if (!s) return true;
  if (s->cast.round == Round::stochastic) return false;  // random bits keyed by the place in the window
  if (s->rule == quant::ScaleRule::none) return true;   // a plain cast
  if (detail::static_point(pm.recipe, point, *s)) return true;  // a calibrated tensor-level scale
  return (s->granularity == quant::Granularity::row || s->granularity == quant::Granularity::block) &&
         s->rule != quant::ScaleRule::nvfp4 &&  // NVFP4's second level is a per-tensor amax
         s->rule != quant::ScaleRule::nvfp4_4over6;
}

bool group_local(const PreparedModel& pm, const LinearGroup& g) {
  return std::all_of(g.begin(), g.end(),
                     [&](const detail::Linear& L) { return token_local(pm, L.act, L.act_points[0]); });
}

bool cacheable(const PreparedModel& pm) {
  if (!group_local(pm, pm.classifier)) return false;
  for (const PreparedLayer& L : pm.layers)
    if (!group_local(pm, L.qkv) || !group_local(pm, L.wo) || !group_local(pm, L.gate_up) ||
        !group_local(pm, L.down) || !token_local(pm, L.q, "q") || !token_local(pm, L.k, "k") ||
        !token_local(pm, L.p, "p") || !token_local(pm, L.v, "v") || !token_local(pm, L.kv, "kv.k"))
      return false;
  return true;
}

}  // namespace

struct Decoder::Impl {
  Impl(PreparedModel prepared, std::size_t positions, int threads)
      : pm(std::move(prepared)), ops(pm, nullptr, threads), threads(threads), c(pm.cfg), positions(positions),
        cached(cacheable(pm)), vocab(static_cast<std::size_t>(c.vocab_size)) {
    if (!cached) {
      window_logits.resize(positions * vocab);
      return;
    }
    cache = detail::KvCache(pm.layers.size(), static_cast<std::size_t>(c.n_kv_heads),
                            static_cast<std::size_t>(c.head_dim()), positions);
    x.resize(static_cast<std::size_t>(c.dim));
    logits.resize(vocab);
  }

  PreparedModel pm;
  detail::ErrorLog log;  // a re-run's errors (not reported: generation has no reference)
  detail::ForwardOps ops;
  const int threads;
  const LlamaConfig& c;
  const std::size_t positions;
  const bool cached;
  const std::size_t vocab;
  std::size_t pos = 0;
  std::vector<int> tokens;           // the prefix (re-run when not cached)
  std::vector<float> window_logits;  // positions x vocab (re-run)
  detail::KvCache cache;
  detail::BlockActs acts;
  std::vector<float> x, xn, logits;

  void check_token(int token) const {
    if (token < 0 || token >= c.vocab_size)
      throw Error("decode: token id " + std::to_string(token) + " is outside the model's vocabulary [0, " +
                  std::to_string(c.vocab_size) + ")");
    if (pos >= positions)
      throw Error("decode: position " + std::to_string(pos) + " is past the " + std::to_string(positions) +
                  " the decoder was made for");
  }

  // One token through the layers at position pos; the classifier only when `score`.
  void run(int token, bool score) {
    detail::embed(ops, std::span<const int>(&token, 1), x.data());
    for (std::size_t l = 0; l < pm.layers.size(); ++l) {
      const detail::KvLayer layer = cache.layer(l);
      detail::block_forward(ops, static_cast<int>(l), x.data(), detail::BlockRows{1, 1, pos, &layer}, acts);
    }
    if (score) detail::head_forward(ops, x.data(), 1, 0, logits.data(), xn);
  }
};

Decoder::Decoder(const LlamaModel& model, const Recipe& recipe, std::size_t positions, int threads,
                 const CalibrationText* calib) {
  const LlamaConfig& c = model.config;
  if (positions == 0) throw Error("decode: a decoder for 0 positions");
  // What the run holds, checked before the decoder allocates any of it, as evaluate() counts
  // it: the model's weights (unless mapped), the recipe's copies, then the cache and the step's
  // rows, or a re-run's window.
  const double P = static_cast<double>(positions), dim = c.dim, kv = c.kv_dim(), qd = c.q_dim(),
               hidden = c.hidden_dim, vocab = c.vocab_size;
  const double weights =
      weight_bytes(c) * ((model.mapped ? 0 : 1) + (recipe.is_identity() ? 0 : 1) + (recipe.quarot ? 1 : 0));
  // The step's rows (block_forward's tensors and the ops' [q | k | v] and [gate | up]): 5 of dim,
  // 3 of q_dim, 4 of kv_dim, 3 of hidden, a row of scores, the logits.
  check_memory(weights + cache_bytes(c, positions) + 4 * (5 * dim + 3 * qd + 4 * kv + 3 * hidden + P + vocab),
               "decode: a KV cache of " + std::to_string(positions) + " positions x " + std::to_string(c.n_layers) +
                   " layers x " + std::to_string(c.n_kv_heads) + " KV heads x head_dim " +
                   std::to_string(c.head_dim()) + " (K and V, float32) and the weights");
  std::optional<detail::CalibratedWeights> calibrated;  // evaluate()'s, computed or read from the cache
  if (recipe.needs_calibration() && calib) calibrated = detail::calibrate_weights(model, recipe, *calib, positions, threads);
  auto pm = detail::prepare(model, recipe, positions, calibrated ? &*calibrated : nullptr, /*pack=*/true);
  if (!cacheable(pm))
    check_memory(weights + 4 * P * (8 * dim + 4 * kv + 4 * hidden + 2 * P + 2 * vocab + c.head_dim()),
                 "decode: re-running windows of up to " + std::to_string(positions) + " positions and the weights");
  impl_ = std::make_unique<Impl>(std::move(pm), positions, threads);
}

Decoder::~Decoder() = default;
Decoder::Decoder(Decoder&&) noexcept = default;
Decoder& Decoder::operator=(Decoder&&) noexcept = default;

std::span<const float> Decoder::step(int token) {
  Impl& d = *impl_;
  d.check_token(token);
  if (!d.cached) {
    d.tokens.push_back(token);
    const std::size_t T = d.tokens.size();
    detail::forward_window(d.pm, d.tokens, d.window_logits.data(), d.log, d.threads, T - 1);
    ++d.pos;
    return {d.window_logits.data() + (T - 1) * d.vocab, d.vocab};
  }
  d.run(token, true);
  ++d.pos;
  return d.logits;
}

void Decoder::feed(int token) {
  Impl& d = *impl_;
  d.check_token(token);
  if (d.cached) d.run(token, false);
  else d.tokens.push_back(token);
  ++d.pos;
}

std::size_t Decoder::position() const { return impl_->pos; }

bool Decoder::cached() const { return impl_->cached; }

double Decoder::step_weight_bytes() const {
  double total = 0;
  const auto add = [&](const LinearGroup& group) {
    for (const detail::Linear& L : group)
      total += static_cast<double>(L.packed ? L.packed->bytes() : L.engine ? L.n * L.k : quant::stored_bytes(L.weight));
  };
  for (const auto& layer : impl_->pm.layers)
    for (const auto* group : {&layer.qkv, &layer.wo, &layer.gate_up, &layer.down}) add(*group);
  add(impl_->pm.classifier);
  return total;
}

double Decoder::cache_bytes(const LlamaConfig& c, std::size_t positions) {
  return 2.0 * 4.0 * static_cast<double>(c.n_layers) * static_cast<double>(positions) *
         static_cast<double>(c.kv_dim());
}

}  // namespace lowp::accuracy
