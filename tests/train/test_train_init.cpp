// `lowp train --init`: fine-tuning a checkpoint lowp evaluates. A GGUF (stories260K, GQA,
// untied, its SentencePiece tokenizer inside) and a Hugging Face folder (Qwen2-style q/k/v
// biases) train a few steps under fp32 and FP8; the loss falls; `lowp eval` (evaluate()) of every
// export gives the logits of the trainer's own fp32 forward of the weights in state.bin; at step
// 0 the exports evaluate as the original checkpoint does; --resume continues bitwise; bad
// input fails with one line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "accuracy/llama_test_util.hpp"
#include "cli/cli_run.hpp"
#include "io/save_model.hpp"
#include "lowp/accuracy/eval.hpp"
#include "lowp/accuracy/loaders.hpp"
#include "lowp/accuracy/memory.hpp"
#include "lowp/accuracy/recipe.hpp"
#include "lowp/quant/linear.hpp"
#include "train/checkpoint.hpp"
#include "train/llama_train.hpp"
#include "train/train_files.hpp"

namespace {

namespace fs = std::filesystem;
using lowp::accuracy::LlamaModel;
using lowp::test::lowp_run;

fs::path init_dir(const std::string& name) { return lowp::test::train_temp_dir("test_train_init", name); }

std::vector<std::string> args(const fs::path& init, const fs::path& corpus, const fs::path& out, const std::string& recipe,
                              int steps) {
  return {"train", "--init", init.string(), "--corpus", corpus.string(), "--recipe", recipe, "--steps",
          std::to_string(steps), "--batch", "4", "--ctx", "32", "--lr", "1e-3", "--eval-every", std::to_string(steps),
          "--seed", "5", "--threads", "2", "--out", out.string()};
}

// The evaluator's fp32 logits (T x vocab) of `tokens` on `m`, under the default memory budget
// (a test before may have left `lowp ... --max-memory` set: the budget is process-wide).
std::vector<float> eval_logits(const LlamaModel& m, const std::vector<int>& tokens) {
  lowp::accuracy::set_max_memory(0);
  lowp::accuracy::EvalOptions opt;
  opt.keep_logits = true;
  opt.score_all = true;
  opt.ctx = static_cast<int>(tokens.size());
  return lowp::accuracy::evaluate(m, tokens, lowp::accuracy::find_recipe("fp32"), opt).logits;
}

std::vector<int> some_tokens(int vocab) { return lowp::test::random_tokens(24, vocab, 3); }

// The trainer's own fp32 forward of the weights saved in DIR/state.bin (params() order).
std::vector<float> trainer_logits(const LlamaModel& shape, const fs::path& dir, const std::vector<int>& tokens) {
  using namespace lowp::accuracy::train;
  TrainLlama net(shape, lowp::quant::linear_preset("fp32"));
  const std::string path = (dir / "state.bin").string();
  const TrainState st = decode_state(read_state_file(path), path);
  const auto params = net.params();
  EXPECT_EQ(st.tensors.size(), params.size());
  for (std::size_t i = 0; i < params.size() && i < st.tensors.size(); ++i) {
    EXPECT_EQ(st.tensors[i].size(), params[i].size) << params[i].name;
    std::copy_n(st.tensors[i].begin(), std::min(st.tensors[i].size(), params[i].size), params[i].value);
  }
  net.weights_changed();
  net.forward(tokens, {}, 1, tokens.size(), 1, 0);
  return net.logits();
}

// Trains from `init` under fp32 and fp8-tensorwise; the loss falls; the exports (the files
// `exports` names) evaluate as the trainer's forward of state.bin's weights, bitwise (the same
// float32 weights through the same layers: any slip in an exporter or its loader shows).
void fine_tune_and_check(const fs::path& init, const std::string& name, const std::vector<std::string>& exports) {
  const fs::path dir = init_dir(name);
  const LlamaModel original = lowp::accuracy::load_model(init.string());
  const std::vector<int> tokens = some_tokens(original.config.vocab_size);
  for (const std::string recipe : {"fp32", "fp8-tensorwise"}) {
    const fs::path out = dir / recipe;
    const auto r = lowp_run(args(init, lowp::test::train_corpus(), out, recipe, 8));
    ASSERT_EQ(r.code, 0) << r.err;
    const std::vector<double> loss = lowp::test::train_losses(out);
    ASSERT_EQ(loss.size(), 8u);
    // The last two steps' losses below the first two's (batches differ per step).
    EXPECT_LT(loss[6] + loss[7], loss[0] + loss[1]) << recipe;
    const std::vector<float> want = trainer_logits(original, out, tokens);
    for (const std::string& file : exports) {
      const LlamaModel back = lowp::accuracy::load_model((out / file).string());
      EXPECT_EQ(back.config.seq_len, original.config.seq_len) << file;
      EXPECT_EQ(back.config.head_dim(), original.config.head_dim()) << file;
      EXPECT_EQ(back.config.n_kv_heads, original.config.n_kv_heads) << file;
      EXPECT_EQ(back.classifier.empty(), original.classifier.empty()) << file;
      EXPECT_EQ(back.layers[0].bq.size(), original.layers[0].bq.size()) << file;
      EXPECT_EQ(back.layers[0].bo.size(), original.layers[0].bo.size()) << file;
      EXPECT_EQ(eval_logits(back, tokens), want) << recipe << ": " << file;
    }
  }
}

// At step 0 the exports of the dequantized master weights evaluate bitwise as the original.
void step0_exports_match(const fs::path& init, const std::string& name) {
  const fs::path dir = init_dir(name);
  const LlamaModel original = lowp::accuracy::load_model(init.string(), lowp::accuracy::WeightStorage::mapped);
  LlamaModel widened = lowp::accuracy::load_model(init.string());
  const std::vector<int> tokens = some_tokens(original.config.vocab_size);
  const std::vector<float> want = eval_logits(original, tokens);
  lowp::accuracy::train::TrainLlama net(widened, lowp::quant::linear_preset("fp32"));
  const LlamaModel m = net.to_model();
  lowp::accuracy::detail::save_gguf(m, (dir / "model.gguf").string());
  lowp::accuracy::detail::save_safetensors(m, (dir / "model.safetensors").string());
  EXPECT_EQ(eval_logits(lowp::accuracy::load_model((dir / "model.gguf").string()), tokens), want);
  EXPECT_EQ(eval_logits(lowp::accuracy::load_model(dir.string()), tokens), want);
}

// An HF folder with Qwen2's q/k/v biases, made from lowp's own byte-level Shakespeare model
// (random biases added): exported by lowp, read back by the safetensors loader.
fs::path hf_folder_with_biases() {
  const fs::path dir = init_dir("hf_src");
  LlamaModel m = lowp::accuracy::load_model(lowp::accuracy::resolve_model_path("shakespeare"));
  std::mt19937 gen(9);
  std::normal_distribution<float> nd(0.0f, 0.05f);
  for (auto& l : m.layers) {
    l.bq.resize(static_cast<std::size_t>(m.config.q_dim()));
    l.bk.resize(static_cast<std::size_t>(m.config.kv_dim()));
    l.bv.resize(static_cast<std::size_t>(m.config.kv_dim()));
    for (auto* b : {&l.bq, &l.bk, &l.bv})
      for (float& x : *b) x = nd(gen);
  }
  lowp::accuracy::detail::save_safetensors(m, (dir / "model.safetensors").string());
  return dir;
}

TEST(TrainInit, GgufFineTunesAndItsExportsEvaluateAsTheTrainer) {
  LOWP_REQUIRE_SHARED();
  fine_tune_and_check(lowp::test::shared_path("models/tinyllamas/stories260K.gguf"), "gguf",
                      {"model.gguf", "model.safetensors", "model.bin"});
}

TEST(TrainInit, HfFolderWithBiasesFineTunesAndItsExportsEvaluateAsTheTrainer) {
  LOWP_REQUIRE_SHARED();
  const fs::path hf = hf_folder_with_biases();
  const LlamaModel m = lowp::accuracy::load_model(hf.string());
  ASSERT_FALSE(m.layers[0].bq.empty());
  ASSERT_TRUE(m.layers[0].bo.empty());
  fine_tune_and_check(hf, "hf", {"model.gguf", "model.safetensors"});
  // llama2.c's format cannot hold the biases: said, not written.
  const fs::path out = init_dir("hf_note");
  const auto r = lowp_run(args(hf, lowp::test::train_corpus(), out / "run", "fp32", 1));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("note: model.bin not written: llama2.c's format cannot hold attention biases"), std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(out / "run" / "model.bin"));
}

TEST(TrainInit, AtStepZeroTheExportsEvaluateAsTheOriginalCheckpoint) {
  LOWP_REQUIRE_SHARED();
  step0_exports_match(lowp::test::shared_path("models/tinyllamas/stories260K.gguf"), "step0_gguf");
  step0_exports_match(hf_folder_with_biases(), "step0_hf");
}

TEST(TrainInit, ResumeOfAnInitRunIsBitwiseTheUninterruptedRun) {
  LOWP_REQUIRE_SHARED();
  const fs::path init = lowp::test::shared_path("models/tinyllamas/stories260K.gguf");
  const fs::path dir = init_dir("resume");
  auto whole = args(init, lowp::test::train_corpus(), dir / "whole", "fp8-tensorwise", 4);
  whole.insert(whole.end(), {"--save-every", "2"});
  ASSERT_EQ(lowp_run(whole).code, 0);
  // The same run killed after step 3: the step-2 checkpoint survives.
  lowp::accuracy::train::TrainOptions o;
  o.init = init.string();
  o.corpus = lowp::test::train_corpus().string();
  o.recipe = "fp8-tensorwise";
  o.out = (dir / "cut").string();
  o.steps = 4;
  o.batch = 4;
  o.config.seq_len = 32;
  o.lr = 1e-3;
  o.eval_every = 4;
  o.save_every = 2;
  o.seed = 5;
  o.threads = 2;
  struct Killed {};
  EXPECT_THROW(lowp::accuracy::train::run_training(o, false,
                                                   [](const auto& s) {
                                                     if (s.step == 3) throw Killed{};
                                                   }),
               Killed);
  const auto r = lowp_run({"train", "--resume", (dir / "cut").string(), "--steps", "4", "--threads", "1"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* f : {"state.bin", "model.gguf", "model.safetensors", "model.bin"})
    EXPECT_TRUE(lowp::test::slurp(dir / "whole" / f) == lowp::test::slurp(dir / "cut" / f)) << f << " differs";
}

using lowp::test::expect_one_line_failure;

TEST(TrainInit, BadInputFailsWithOneLine) {
  const fs::path dir = init_dir("bad");
  expect_one_line_failure(lowp_run(args(dir / "missing.gguf", lowp::test::train_corpus(), dir / "o1", "fp32", 2)), "missing.gguf");
  auto shaped = args(dir / "missing.gguf", lowp::test::train_corpus(), dir / "o2", "fp32", 2);
  shaped.insert(shaped.end(), {"--dim", "64"});
  const auto r = lowp_run(shaped);
  expect_one_line_failure(r, "--init takes the model's shape");
  EXPECT_EQ(r.code, 2) << "a usage error";
  auto config = args(dir / "missing.gguf", lowp::test::train_corpus(), dir / "o3", "fp32", 2);
  config.insert(config.end(), {"--config", "tiny"});
  expect_one_line_failure(lowp_run(config), "--config cannot be given with it");
  if (fs::exists(lowp::test::shared_path("models/tinyllamas/stories260K.gguf"))) {
    auto ctx = args(lowp::test::shared_path("models/tinyllamas/stories260K.gguf"), lowp::test::train_corpus(), dir / "o4", "fp32", 2);
    ctx[std::find(ctx.begin(), ctx.end(), "--ctx") - ctx.begin() + 1] = "100000";
    expect_one_line_failure(lowp_run(ctx), "is beyond the context length");
  }
}

}  // namespace
