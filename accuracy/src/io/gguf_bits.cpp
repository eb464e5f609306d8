// Bits per weight of a GGUF's searched tensors, from their ggml storage (ggml::bytes_for).
#include "io/gguf_bits.hpp"

#include "file/mapped_file.hpp"
#include "io/ggml/ggml_types.hpp"
#include "io/gguf_file.hpp"
#include "lowp/accuracy/calibrate.hpp"
#include "lowp/accuracy/recipe.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::accuracy::detail {

double gguf_bits_per_weight(const std::string& path, const LlamaConfig& c) {
  const MappedFile file(path);
  const GgufFile g(file.bytes(), path);
  double bits = 0, weights = 0;
  const auto count = [&](const std::string& name) {
    const GgufTensor* t = g.tensor(name);
    if (!t) return false;
    bits += static_cast<double>(ggml::bytes_for(t->type, t->elements)) * 8;
    weights += static_cast<double>(t->elements);
    return true;
  };
  for (int l = 0; l < c.n_layers; ++l)
    for (std::size_t kind = 0; kind < static_cast<std::size_t>(LinearKind::classifier); ++kind)
      if (!count(gguf_linear_name(l, kind))) throw Error(path + " has no tensor " + gguf_linear_name(l, kind));
  if (!count("output.weight") && !count("token_embd.weight")) throw Error(path + " has no classifier");
  return bits / weights;
}

}  // namespace lowp::accuracy::detail
