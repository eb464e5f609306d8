// Training recipe text -> parse_train_recipe -> describe -> the linears of a small 2-layer model
// built from it -> one forward, backward and optimizer step on a fixed batch.
#include "fuzz_support.hpp"
#include "train/llama_train.hpp"
#include "optim/optimizer.hpp"
#include "recipe/train_recipe.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace lowp;
  return fuzz::guarded([&] {
    const train::TrainRecipe r = train::parse_train_recipe(fuzz::text(data, size));
    (void)train::describe(r);
    accuracy::LlamaConfig c;  // `lowp train --config tiny` with 2 layers and a short window
    c.dim = 64, c.hidden_dim = 192, c.n_layers = 2, c.n_heads = 2, c.n_kv_heads = 1, c.vocab_size = 258, c.seq_len = 8;
    accuracy::train::TrainLlama net(accuracy::train::init_model(c, 1), [&](int linear, std::size_t layer) {
      return train::linear_for(r, static_cast<accuracy::LinearKind>(linear), layer, 2);
    }, &r.classifier);
    train::OptimizerConfig oc;
    oc.schedule.total_steps = 2;
    train::apply_optimizer_settings(r, oc);
    train::Optimizer opt(oc);
    std::vector<train::ParamTensor> t;
    for (const auto& p : net.params())
      t.push_back({p.name, std::span<float>(p.value, p.size), std::span<const float>(p.grad, p.size), p.size > 64});
    opt.init_params(t);
    net.weights_changed();
    const std::vector<int> tok = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    const std::vector<int> tgt = {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17};
    net.zero_grad();
    (void)net.forward(tok, tgt, 2, 8, 1, 7);
    net.backward(1, 7);
    (void)opt.step(t);
    net.weights_changed();
    (void)net.save_linear_state();
  });
}
