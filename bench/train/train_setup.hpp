// The step bench_train and bench_mpi_train time: a named `lowp train` config (default "small") with
// windows of `ctx` tokens, one recipe's TrainLlama and optimizer, and a fixed batch of byte tokens.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "train/llama_train.hpp"
#include "optim/optimizer.hpp"
#include "recipe/train_recipe.hpp"
#include "train/trainer.hpp"

namespace lowp::bench {

struct TrainSetup {
  accuracy::LlamaConfig c;
  lowp::train::TrainRecipe recipe;
  std::unique_ptr<accuracy::train::TrainLlama> net;
  std::unique_ptr<lowp::train::Optimizer> opt;
  std::vector<int> tok, tgt;  // batch x ctx each; tgt is tok shifted by one
  std::uint64_t step = 0;

  TrainSetup(const std::string& recipe_name, std::size_t batch, std::size_t ctx, const std::string& config = "small")
      : c(accuracy::train::named_config(config)), recipe(lowp::train::find_train_recipe(recipe_name)) {
    c.seq_len = static_cast<int>(ctx);
    const auto layers = static_cast<std::size_t>(c.n_layers);
    net = std::make_unique<accuracy::train::TrainLlama>(
        accuracy::train::init_model(c, 1),
        [&](int linear, std::size_t layer) {
          return lowp::train::linear_for(recipe, static_cast<accuracy::LinearKind>(linear), layer, layers);
        },
        &recipe.classifier);
    lowp::train::OptimizerConfig oc;
    oc.schedule.lr = 1e-4;
    lowp::train::apply_optimizer_settings(recipe, oc);
    opt = std::make_unique<lowp::train::Optimizer>(oc);
    for (std::size_t i = 0; i < batch * (ctx + 1); ++i) tok.push_back(static_cast<int>((i * 2654435761u >> 7) % 256));
    tgt.assign(tok.begin() + 1, tok.end());
    tok.resize(batch * ctx);
    tgt.resize(batch * ctx);
  }

  // The optimizer step on the gradients the net holds; the weights change in place.
  void optimizer_step() {
    opt->step(accuracy::train::optimizer_tensors(*net));
    net->weights_changed();
  }
};

}  // namespace lowp::bench
