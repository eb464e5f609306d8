#include "train/train_model.hpp"

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

}  // namespace lowp::accuracy::train
