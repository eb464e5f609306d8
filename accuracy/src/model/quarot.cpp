// QuaRot's offline rotation of a Llama model (Ashkboos et al. 2024, "QuaRot: Outlier-Free 4-Bit
// Inference in Rotated LLMs"), without GPTQ: the weights are then quantized round-to-nearest.
#include <algorithm>

#include "model/llama.hpp"
#include "lowp/hadamard/transform.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::accuracy::detail {
namespace {

using hadamard::Rotation;
using hadamard::RotationKind;

// A Hadamard rotation of length n, or block-diagonal Hadamard where n has no Kronecker form.
// A size without a Kronecker Hadamard (hadamard/transform.hpp) gets the largest block-diagonal
// Sylvester one instead, which has no random signs: the seed is then unused.
Rotation hadamard_of(std::size_t n, bool randomized, std::uint64_t seed) {
  if (hadamard::kronecker_order(n) != 0)
    return {randomized ? RotationKind::randomized : RotationKind::hadamard, n, 0, randomized ? seed : 0};
  return {RotationKind::block_diagonal, n, hadamard::largest_power_of_two_block(n), 0};
}

// W <- W diag(g): an RMSNorm gain moved into the linear that reads the normalised vector.
void scale_columns(std::vector<float>& w, std::size_t cols, const std::vector<float>& g) {
  for (std::size_t i = 0; i < w.size(); ++i) w[i] *= g[i % cols];
}

// W <- R^T W for a layer writing into the rotated stream (W: out x in, out = R's size):
// (R^T W)^T = W^T R, so the rows of W^T are rotated.
void rotate_output_side(std::vector<float>& w, std::size_t out, std::size_t in, const Rotation& r) {
  std::vector<float> t(w.size());
  for (std::size_t o = 0; o < out; ++o)
    for (std::size_t i = 0; i < in; ++i) t[i * out + o] = w[o * in + i];
  r.apply(t.data(), in, out);
  for (std::size_t o = 0; o < out; ++o)
    for (std::size_t i = 0; i < in; ++i) w[o * in + i] = t[i * out + o];
}

}  // namespace

Rotation apply_quarot(LlamaModel& m, std::uint64_t seed) {
  const auto& c = m.config;
  const auto dim = static_cast<std::size_t>(c.dim), hidden = static_cast<std::size_t>(c.hidden_dim);
  const auto vocab = static_cast<std::size_t>(c.vocab_size), kv = static_cast<std::size_t>(c.kv_dim());
  const auto qd = static_cast<std::size_t>(c.q_dim());
  for (const auto& L : m.layers)  // an output-side bias would have to turn with the stream
    if (!L.bo.empty()) throw lowp::Error("an o_proj bias is not supported with QuaRot");
  const Rotation r = hadamard_of(dim, true, seed);
  const Rotation down = hadamard_of(hidden, false, 0);
  r.validate();
  down.validate();
  const std::vector<float> ones(dim, 1.0f);

  // Untie the classifier: it reads the rotated stream, the embedding writes it.
  if (m.classifier.empty()) m.classifier = m.token_embedding;
  scale_columns(m.classifier, dim, m.final_norm);
  m.final_norm = ones;
  r.fold_into_weight(m.classifier.data(), vocab, dim);
  r.fold_into_weight(m.token_embedding.data(), vocab, dim);  // each row e becomes e R

  for (auto& L : m.layers) {
    for (auto* w : {&L.wq, &L.wk, &L.wv}) scale_columns(*w, dim, L.attn_norm);
    for (auto* w : {&L.w_gate, &L.w_up}) scale_columns(*w, dim, L.ffn_norm);
    L.attn_norm = ones;
    L.ffn_norm = ones;
    r.fold_into_weight(L.wq.data(), qd, dim);
    r.fold_into_weight(L.wk.data(), kv, dim);
    r.fold_into_weight(L.wv.data(), kv, dim);
    r.fold_into_weight(L.w_gate.data(), hidden, dim);
    r.fold_into_weight(L.w_up.data(), hidden, dim);
    rotate_output_side(L.wo, dim, qd, r);
    rotate_output_side(L.w_down, dim, hidden, r);
    down.fold_into_weight(L.w_down.data(), dim, hidden);  // its input arrives as h H
  }
  return down;
}

}  // namespace lowp::accuracy::detail
