#include "train/train_model.hpp"

#include <cmath>

namespace lowp::accuracy::train {

LlamaModel trained_model(const LlamaConfig& c, const std::vector<float>& embedding,
                         std::span<const LayerTensors<const std::vector<float>>> layers,
                         const std::vector<float>& final_norm, const std::vector<float>& classifier) {
  LlamaModel m;
  m.config = c;
  m.source = "llama2c";
  m.path = "(trained weights)";
  m.token_embedding = embedding;
  m.layers.resize(layers.size());
  for (std::size_t l = 0; l < layers.size(); ++l)
    for (std::size_t i = 0; i < detail::kLayerTensors.size(); ++i)
      if (layers[l][i]) m.layers[l].*detail::kLayerTensors[i].layer_member = *layers[l][i];
  m.final_norm = final_norm;
  m.classifier = classifier;
  return m;
}

std::vector<TrainParam> param_list(std::vector<float>& embedding, std::vector<float>& d_embedding,
                                   std::span<const LayerParams> layers, std::vector<float>& final_norm,
                                   std::vector<float>& d_final_norm, std::vector<float>& classifier,
                                   std::vector<float>& d_classifier) {
  using detail::kTensors;
  std::vector<TrainParam> p;
  // Matrices (the embedding, the linears) take weight decay; vectors (norm gains, biases) do not.
  const auto add = [&](const detail::TensorSpec& t, std::string name, int layer, std::vector<float>& v,
                       std::vector<float>& g) {
    p.push_back({std::move(name), layer, v.data(), g.data(), v.size(), t.cols != detail::Extent::one});
  };
  add(kTensors.front(), kTensors.front().checkpoint, -1, embedding, d_embedding);
  for (std::size_t l = 0; l < layers.size(); ++l)
    for (std::size_t i = 0; i < detail::kLayerTensors.size(); ++i) {
      const detail::TensorSpec& t = detail::kLayerTensors[i];
      std::vector<float>* v = layers[l].value[i];
      if (!v || (t.optional && v->empty())) continue;
      add(t, "layers." + std::to_string(l) + "." + t.checkpoint, static_cast<int>(l), *v, *layers[l].grad[i]);
    }
  const detail::TensorSpec &norm = kTensors[kTensors.size() - 2], &cls = kTensors.back();
  add(norm, norm.checkpoint, -1, final_norm, d_final_norm);
  if (!classifier.empty()) add(cls, cls.checkpoint, -1, classifier, d_classifier);
  return p;
}

std::vector<lowp::train::ParamTensor> optimizer_tensors(TrainModel& net) {
  std::vector<lowp::train::ParamTensor> t;
  for (const TrainParam& p : net.params())
    t.push_back({p.name, std::span<float>(p.value, p.size), std::span<const float>(p.grad, p.size), p.matrix});
  return t;
}

}  // namespace lowp::accuracy::train
