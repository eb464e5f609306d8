// TrainLlama::operand_stats(): what the recipe's forward quantization does to each operand.
#include <cmath>
#include <limits>

#include "lowp/formats/bulk.hpp"
#include "train/llama_train.hpp"

namespace lowp::accuracy::train {
namespace {

constexpr const char* kLinName[] = {"wq", "wk", "wv", "wo", "w_gate", "w_up", "w_down"};

TrainLlama::OperandStat measure(const quant::QuantSpec& spec, const quant::GemmRecipe& g, std::vector<float> x,
                                std::size_t rows, std::size_t cols) {
  if (g.rotation != hadamard::RotationKind::none) {
    hadamard::Rotation rot{g.rotation, cols, g.rotation_block, 0};
    rot.apply(x.data(), rows, cols);
  }
  TrainLlama::OperandStat s;
  const quant::QuantizedTensor q = quant::quantize(spec, x.data(), rows, cols);
  std::vector<float> deq(x.size()), unscaled(x.size());
  quant::dequantize(q, deq.data());
  decode_f32(spec.format, q.codes, unscaled);
  const double top = spec.format.max_finite();
  double sig = 0, noise = 0;
  std::size_t sat = 0, nonzero = 0, flushed = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i]) || !std::isfinite(deq[i])) continue;
    sig += static_cast<double>(x[i]) * x[i];
    noise += (static_cast<double>(deq[i]) - x[i]) * (static_cast<double>(deq[i]) - x[i]);
    sat += std::abs(static_cast<double>(unscaled[i])) == top;
    if (x[i] != 0) {
      ++nonzero;
      flushed += deq[i] == 0;
    }
  }
  s.sqnr_db = noise > 0 ? 10 * std::log10(sig / noise) : std::numeric_limits<double>::infinity();
  s.saturated = static_cast<double>(sat) / static_cast<double>(x.size());
  s.flushed = nonzero ? static_cast<double>(flushed) / static_cast<double>(nonzero) : 0;
  return s;
}

}  // namespace

std::vector<TrainLlama::OperandStat> TrainLlama::operand_stats() {
  std::vector<OperandStat> out;
  const std::size_t R = B_ * T_;
  if (R == 0) return out;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    Layer& L = layers_[l];
    const std::vector<float>* inputs[] = {&L.xn1, &L.xn1, &L.xn1, &L.att, &L.xn2, &L.xn2, &L.h};
    for (std::size_t i = 0; i < L.lin.size(); ++i) {
      const quant::GemmRecipe& g = L.lin[i].recipe().fwd;
      const std::size_t k = inputs[i]->size() / R, n = L.lin[i].weight().size() / k;
      for (int side = 0; side < 2; ++side) {
        const auto& spec = side == 0 ? g.a : g.b;
        if (!spec) continue;
        OperandStat s = side == 0 ? measure(*spec, g, *inputs[i], R, k) : measure(*spec, g, L.lin[i].weight(), n, k);
        s.layer = static_cast<int>(l);
        s.linear = std::string(kLinName[i]);
        s.operand = std::string(1, side == 0 ? 'X' : 'W');
        out.push_back(s);
      }
    }
  }
  return out;
}

}  // namespace lowp::accuracy::train
