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
    std::vector<float>* bias[4] = {&w.bq, &w.bk, &w.bv, &w.bo};
    for (std::size_t i = 0; i < 4; ++i) *bias[i] = *L.bias[i];
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
  constexpr const char* kBias[4] = {"bq", "bk", "bv", "bo"};
  std::vector<TrainParam> p;
  const auto add = [&](std::string name, int layer, std::vector<float>& v, std::vector<float>& g, bool matrix) {
    p.push_back({std::move(name), layer, v.data(), g.data(), v.size(), matrix});
  };
  add("tok_embeddings", -1, embedding, d_embedding, true);
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const LayerParams& L = layers[l];
    const std::string pre = "layers." + std::to_string(l) + ".";
    const int li = static_cast<int>(l);
    add(pre + "attn_norm", li, *L.attn_norm, *L.d_attn_norm, false);
    for (int i : {0, 1, 2, 3}) add(pre + kName[i], li, *L.w[i], *L.dw[i], true);
    for (int i : {0, 1, 2, 3})
      if (L.b[i] && !L.b[i]->empty()) add(pre + kBias[i], li, *L.b[i], *L.db[i], false);
    add(pre + "ffn_norm", li, *L.ffn_norm, *L.d_ffn_norm, false);
    for (int i : {4, 6, 5}) add(pre + kName[i], li, *L.w[i], *L.dw[i], true);  // gate, down, up
  }
  add("norm", -1, final_norm, d_final_norm, false);
  if (!classifier.empty()) add("output", -1, classifier, d_classifier, true);
  return p;
}

std::vector<lowp::train::ParamTensor> optimizer_tensors(TrainModel& net) {
  std::vector<lowp::train::ParamTensor> t;
  for (const TrainParam& p : net.params())
    t.push_back({p.name, std::span<float>(p.value, p.size), std::span<const float>(p.grad, p.size), p.matrix});
  return t;
}

}  // namespace lowp::accuracy::train
