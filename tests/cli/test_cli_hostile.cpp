// Hostile or unusable model files through `lowp eval` / `lowp sweep` in-process: each is one
// stderr line and exit 1 (2 for a bad option), never a crash or an allocation it cannot afford.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <string>

#include "../accuracy/llama_test_util.hpp"
#include "../accuracy/model_files.hpp"
#include "cli/cli_run.hpp"

namespace {

using lowp::test::lowp_run;
using lowp::test::Result;

void one_line(const Result& r, int code, const std::vector<std::string>& parts) {
  EXPECT_EQ(r.code, code) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  for (const auto& p : parts) EXPECT_NE(r.err.find(p), std::string::npos) << "missing '" << p << "' in " << r.err;
}

class CliHostile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = lowp::test::temp_dir("cli_hostile");
    model_ = lowp::test::make_model(lowp::test::gqa_config(), 21);
    lowp::test::write_llama2c(dir_ + "/m.bin", model_);
    lowp::test::write_text(dir_ + "/ids.txt", "1\n2\n3\n0\n");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
  lowp::accuracy::LlamaModel model_;
};

TEST_F(CliHostile, TextFileIsNotACheckpoint) {
  lowp::test::write_text(dir_ + "/story.txt", "Once upon a time there was a model file that was not one.\n");
  one_line(lowp_run({"eval", "--model", dir_ + "/story.txt", "--tokens", dir_ + "/ids.txt"}), 1,
           {"lowp eval: " + dir_ + "/story.txt: not a checkpoint lowp reads (llama2.c .bin, GGUF, safetensors)"});
}

TEST_F(CliHostile, MaxMemory) {
  const std::string m = dir_ + "/m.bin", ids = dir_ + "/ids.txt";
  one_line(lowp_run({"eval", "--model", m, "--tokens", ids, "--max-memory", "1K"}), 1,
           {"lowp eval: " + m + ": dim 64, hidden_dim 96, n_layers 2, n_kv_heads 4 and vocab_size 40 (float32 weights) need",
            "above the memory budget of 1.0 KiB (--max-memory)"});
  one_line(lowp_run({"sweep", "--model", m, "--tokens", ids, "--recipes", "bf16", "--max-memory", "1K"}), 1,
           {"lowp sweep: ", "above the memory budget of 1.0 KiB (--max-memory)"});
  one_line(lowp_run({"eval", "--model", m, "--tokens", ids, "--max-memory", "lots"}), 2,
           {"lowp eval: --max-memory: memory size 'lots' is not a byte count"});
  // The budget is per run: the default is back for the next one.
  EXPECT_EQ(lowp_run({"eval", "--model", m, "--tokens", ids}).code, 0);
  EXPECT_EQ(lowp_run({"eval", "--model", m, "--tokens", ids, "--max-memory", "64M"}).code, 0);
}

TEST_F(CliHostile, NonFiniteReferenceIsAnError) {
  lowp::accuracy::LlamaModel bad = model_;
  bad.layers[1].w_up[10] = std::numeric_limits<float>::quiet_NaN();
  lowp::test::write_llama2c(dir_ + "/nan.bin", bad);
  one_line(lowp_run({"eval", "--model", dir_ + "/nan.bin", "--tokens", dir_ + "/ids.txt"}), 1,
           {"lowp eval: the float32 reference is not finite: first NaN in the output of up of layer 1"});
  // A quantized recipe is compared with that reference, so it cannot run either.
  one_line(lowp_run({"eval", "--model", dir_ + "/nan.bin", "--tokens", dir_ + "/ids.txt", "--recipe", "bf16"}), 1,
           {"lowp eval: the float32 reference is not finite"});
}

}  // namespace
