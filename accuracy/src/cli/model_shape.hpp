// The model-shape options `lowp train` and `lowp probe` share: --config or --dim/--layers/
// --heads/--kv-heads/--hidden for a model from scratch, --ctx for the window. One parser, so a
// shape given to both commands is the same model (a probe beside a training comparison).
#pragma once
#include <CLI/CLI.hpp>

#include <string>

#include "lowp/accuracy/model.hpp"

namespace lowp::cli {

struct ShapeArgs {
  std::string config;
  int dim = 0, layers = 0, heads = 0, kv_heads = 0, hidden = 0, ctx = 0;
};

void add_shape_options(CLI::App* app, ShapeArgs& a);

// The shape from scratch (`from` empty) or, with a checkpoint `from`, only the window (0: the
// default, 128 or the model's context); a usage Failure for a contradiction.
accuracy::LlamaConfig resolve_shape(const ShapeArgs& a, const std::string& from);

}  // namespace lowp::cli
