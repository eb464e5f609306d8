// Training recipes: per GEMM of each linear (forward, dgrad, wgrad) a quant::LinearRecipe,
// which layers and linears stay in high precision, and the optimizer's master-weight and
// moment formats. Written in the `key = value` text of evaluation recipes (docs/training.md,
// "Training recipe files"); the built-in ones are that text too.
//
// Always float32, whatever the recipe: the embedding, RMSNorm, RoPE, the attention matmuls
// (Q K^T, softmax, P V), the loss. The linears (wq, wk, wv, wo, gate, up, down, classifier)
// are quant::QuantLinear layers whose recipe linear_for() gives.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lowp/accuracy/recipe.hpp"
#include "lowp/quant/linear.hpp"
#include "optim/optimizer.hpp"
#include "recipe/scalify_config.hpp"

namespace lowp::train {

struct TrainRecipe {
  std::string name;
  std::string note;  // one line
  std::string text;  // the recipe in the file format (parse_train_recipe(text) gives it back)

  quant::LinearRecipe linear;  // every linear inside the layers, unless overridden below
  std::array<std::optional<quant::LinearRecipe>, 7> per_kind;  // linear.<wq..down>
  std::map<std::size_t, quant::LinearRecipe> per_layer;         // layer.<i>
  std::size_t keep_first = 0, keep_last = 0;  // layers whose linears run `keep`
  quant::LinearRecipe keep;                    // default: the bf16 preset
  quant::LinearRecipe classifier;              // default: the bf16 preset (fp32 in `fp32`)
  bool pad = false;  // `pad = on`: every block or tile a dimension does not divide is zero-padded

  OptimizerKind optimizer = OptimizerKind::adamw;
  MasterFormat master = MasterFormat::fp32;
  bool master_stochastic = false;
  MomentFormat moments = MomentFormat::fp32;
  // `model = scalify`: the whole model on quant::ScaledTensors (train/scalify_llama.hpp) instead
  // of float32 tensors with QuantLinear linears; the linear keys above then do not apply.
  bool scalify = false;
  accuracy::train::ScalifyConfig scalify_formats;  // scalify.<weight|act|grad|fwd|bwd> keys

  // The evaluation keys of the same text (one recipe language, docs/recipes.md): weights.<kind>
  // and act.<kind> (recipe-wide and layer.<N>.*) set the forward GEMM's W and X of those linears
  // over the GEMM keys above; the others (attn.*, kv*, quarot, seed, weights.calibrate*) do not
  // apply to training and are listed in eval_only_keys, in file order.
  accuracy::Recipe eval;
  std::vector<std::string> eval_only_keys;
};

// The recipe of one linear: layer.<i>, else the kept first/last layers, else linear.<kind>,
// else `linear`; the classifier has its own. `layer` is ignored for the classifier. The
// evaluation keys' forward operands (weights.<kind>, act.<kind>, layer.<N>.*) replace its fwd's.
quant::LinearRecipe linear_for(const TrainRecipe& r, accuracy::LinearKind kind, std::size_t layer,
                               std::size_t n_layers);

// Sets the optimizer kind and the master / moment formats of `c` from the recipe.
void apply_optimizer_settings(const TrainRecipe& r, OptimizerConfig& c);

// Parses the text format; throws lowp::Error "train recipe line N '<line>': why" on anything
// malformed (unknown key, preset, spec, rotation, or a GEMM combination QuantLinear rejects).
TrainRecipe parse_train_recipe(std::string_view text);

// The built-in recipes, in a fixed order (fp32, bf16, bf16-pure, bf16-pure-sr,
// fp8-tensorwise, fp8-rowwise, fp8-rowwise-gw-hp, fp8-delayed, fp8-current, mxfp8, mxfp8-te,
// fp8-block128, nvfp4, nvfp4-train, quartet-fp4, quartet2-nvfp4, switchback-int8, scalify).
// A name they share with the evaluation recipes has the same forward in the layers' linears.
std::span<const TrainRecipe> builtin_train_recipes();
// A built-in training name, else an evaluation built-in name (its text read as a training
// recipe), else a readable recipe file; lowp::Error listing the names otherwise.
TrainRecipe find_train_recipe(std::string_view name_or_path);

// Several lines for `lowp recipes`: per GEMM of the layer linears (formats, scaling, rounding,
// rotation), the overrides, what stays in high precision, the optimizer formats.
std::string describe(const TrainRecipe& r);

}  // namespace lowp::train
