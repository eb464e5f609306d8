#include "train/train_model.hpp"

#include <cmath>

namespace lowp::accuracy::train {

LlamaModel trained_model(const LlamaConfig& c, const std::vector<float>& embedding, std::span<const TrainedLayer> layers,
                         const std::vector<float>& final_norm, const std::vector<float>& classifier) {
  LlamaModel m;
  m.config = c;
  m.source = "llama2c";
  m.path = "(trained weights)";
  m.token_embedding = embedding;
  for (const TrainedLayer& L : layers) {
    LayerWeights w;
    w.attn_norm = *L.attn_norm;
    w.ffn_norm = *L.ffn_norm;
    std::vector<float>* dst[7] = {&w.wq, &w.wk, &w.wv, &w.wo, &w.w_gate, &w.w_up, &w.w_down};
    for (std::size_t i = 0; i < 7; ++i) *dst[i] = *L.linear[i];
    m.layers.push_back(std::move(w));
  }
  m.final_norm = final_norm;
  m.classifier = classifier;
  return m;
}

std::vector<TrainParam> param_list(std::vector<float>& embedding, std::vector<float>& d_embedding,
                                   std::span<const LayerParams> layers, std::vector<float>& final_norm,
                                   std::vector<float>& d_final_norm, std::vector<float>& classifier,
                                   std::vector<float>& d_classifier) {
  constexpr const char* kName[7] = {"wq", "wk", "wv", "wo", "w_gate", "w_up", "w_down"};
  std::vector<TrainParam> p;
  const auto add = [&](std::string name, int layer, std::vector<float>& v, std::vector<float>& g) {
    p.push_back({std::move(name), layer, v.data(), g.data(), v.size()});
  };
  add("tok_embeddings", -1, embedding, d_embedding);
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const LayerParams& L = layers[l];
    const std::string pre = "layers." + std::to_string(l) + ".";
    const int li = static_cast<int>(l);
    add(pre + "attn_norm", li, *L.attn_norm, *L.d_attn_norm);
    for (int i : {0, 1, 2, 3}) add(pre + kName[i], li, *L.w[i], *L.dw[i]);
    add(pre + "ffn_norm", li, *L.ffn_norm, *L.d_ffn_norm);
    for (int i : {4, 6, 5}) add(pre + kName[i], li, *L.w[i], *L.dw[i]);  // gate, down, up
  }
  add("norm", -1, final_norm, d_final_norm);
  if (!classifier.empty()) add("output", -1, classifier, d_classifier);
  return p;
}

void rope_tables(const LlamaConfig& c, std::vector<float>& cos_table, std::vector<float>& sin_table) {
  const std::size_t hd = static_cast<std::size_t>(c.head_dim()), half = hd / 2, seq = static_cast<std::size_t>(c.seq_len);
  cos_table.resize(seq * half);
  sin_table.resize(seq * half);
  for (std::size_t pos = 0; pos < seq; ++pos)
    for (std::size_t i = 0; i < half; ++i) {
      const double freq =
          std::pow(static_cast<double>(c.rope_theta), -static_cast<double>(2 * i) / static_cast<double>(hd));
      const double angle = static_cast<double>(pos) * freq;
      cos_table[pos * half + i] = static_cast<float>(std::cos(angle));
      sin_table[pos * half + i] = static_cast<float>(std::sin(angle));
    }
}

std::vector<lowp::train::ParamTensor> optimizer_tensors(TrainModel& net, const LlamaConfig& c) {
  std::vector<lowp::train::ParamTensor> t;
  for (const TrainParam& p : net.params())
    t.push_back({p.name, std::span<float>(p.value, p.size), std::span<const float>(p.grad, p.size),
                 p.size > static_cast<std::size_t>(c.dim)});
  return t;
}

}  // namespace lowp::accuracy::train
