// --config / --dim ... / --ctx for `lowp train` and `lowp probe` (model_shape.hpp).
#include "cli/model_shape.hpp"

#include "cli/command.hpp"
#include "lowp/numerics/error.hpp"
#include "train/trainer.hpp"

namespace lowp::cli {

void add_shape_options(CLI::App* app, ShapeArgs& a) {
  app->add_option("--config", a.config, "Model shape: tiny, small (default) or medium");
  app->add_option("--dim", a.dim, "Residual width");
  app->add_option("--layers", a.layers, "Transformer blocks");
  app->add_option("--heads", a.heads, "Attention heads");
  app->add_option("--kv-heads", a.kv_heads, "KV heads (default: --heads)");
  app->add_option("--hidden", a.hidden, "SwiGLU width (default: 8/3 dim rounded up to 32)");
  app->add_option("--ctx", a.ctx, "Window length in tokens (default 128; with --init at most the model's context)");
}

accuracy::LlamaConfig resolve_shape(const ShapeArgs& a, const std::string& from) {
  const bool shape = a.dim || a.layers || a.heads || a.kv_heads || a.hidden;
  if (!from.empty() && (shape || !a.config.empty()))
    throw Failure{exit_usage, "--init takes the model's shape from " + from + ": " +
                                  (a.config.empty() ? "--dim/--layers/--heads/--kv-heads/--hidden" : "--config") +
                                  " cannot be given with it"};
  if (!a.config.empty() && shape) throw Failure{exit_usage, "give --config or --dim/--layers/--heads/--kv-heads/--hidden, not both"};
  if (a.ctx < 0) throw Failure{exit_usage, "--ctx must be positive, not " + std::to_string(a.ctx)};
  accuracy::LlamaConfig c;
  try {
    c = accuracy::train::named_config(a.config.empty() ? "small" : a.config);
  } catch (const Error& e) {
    throw Failure{exit_usage, e.what()};
  }
  if (shape) {
    if (!a.dim || !a.layers || !a.heads)
      throw Failure{exit_usage, "--dim, --layers and --heads go together (--kv-heads and --hidden are optional)"};
    c.dim = a.dim;
    c.n_layers = a.layers;
    c.n_heads = a.heads;
    c.n_kv_heads = a.kv_heads ? a.kv_heads : a.heads;
    c.hidden_dim = a.hidden ? a.hidden : (a.dim * 8 / 3 + 31) / 32 * 32;
  }
  if (a.ctx) c.seq_len = a.ctx;
  if (!from.empty() && !a.ctx) c.seq_len = 0;  // the default window: 128, or the model's context if shorter
  return c;
}

}  // namespace lowp::cli
