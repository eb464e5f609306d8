// `lowp tokenize`, and --bos on `lowp eval` (in-process): tokenizers from ../shared.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "../accuracy/model_files.hpp"
#include "cli/cli_run.hpp"

namespace {

namespace fs = std::filesystem;
using lowp::test::lowp_run;
using lowp::test::Result;

const std::string shared = LOWP_SHARED_DIR;
const std::string kLlama3 = shared + "/tokenizers/llama3";
const std::string kGpt2 = shared + "/tokenizers/gguf-vocab/ggml-vocab-gpt-2.gguf";

void expect_one_line(const Result& r, int code, const std::string& starts) {
  EXPECT_EQ(r.code, code) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind(starts, 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(CliTokenize, FolderWithOnlyTokenizerJson) {
  if (!fs::exists(kLlama3 + "/tokenizer.json")) GTEST_SKIP() << "needs " << kLlama3 << " (../shared is absent)";
  const std::string dir = lowp::test::temp_dir("cli_tokenize");
  fs::copy_file(kLlama3 + "/tokenizer.json", dir + "/tokenizer.json");
  // Llama 3 ids (llama3.out: "Hello world" is 9906 1917; " Hello world" 22691 1917).
  Result r = lowp_run({"tokenize", "--model", dir}, "Hello world");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "9906\n1917\n");
  r = lowp_run({"tokenize", "--model", dir + "/tokenizer.json"}, " Hello world");
  EXPECT_EQ(r.out, "22691\n1917\n");
  // Without tokenizer_config.json nothing names the BOS token.
  expect_one_line(lowp_run({"tokenize", "--model", dir, "--bos", "on"}, "Hello"), 1, "lowp tokenize: ");
  fs::remove_all(dir);
  // With it, BOS is <|begin_of_text|>.
  r = lowp_run({"tokenize", "--model", kLlama3, "--bos", "on"}, "Hello world");
  EXPECT_EQ(r.out, "128000\n9906\n1917\n");
  r = lowp_run({"tokenize", "--model", kLlama3, "--bos", "auto"}, "Hello world");
  EXPECT_EQ(r.out, "128000\n9906\n1917\n");  // llama.cpp's llama3 pre-tokenizer adds BOS
}

TEST(CliTokenize, VocabularyOnlyGguf) {
  if (!fs::exists(kGpt2)) GTEST_SKIP() << "needs " << kGpt2 << " (../shared is absent)";
  const std::string dir = lowp::test::temp_dir("cli_tokenize_gguf");
  lowp::test::write_text(dir + "/t.txt", "Hello world");
  const Result r = lowp_run({"tokenize", "--model", kGpt2, "--text", dir + "/t.txt"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "15496\n995\n");  // GPT-2's ids
  EXPECT_EQ(lowp_run({"tokenize", "--model", kGpt2, "--bos", "auto"}, "Hello world").out, "15496\n995\n");
  fs::remove_all(dir);
}

TEST(CliTokenize, BadInputIsOneLine) {
  expect_one_line(lowp_run({"tokenize", "--model", "/nonexistent/dir/tok.json"}, "x"), 1, "lowp tokenize: ");
  expect_one_line(lowp_run({"tokenize", "--model", kGpt2, "--bos", "maybe"}, "x"), 2,
                  "lowp tokenize: --bos 'maybe' is not on, off or auto");
  expect_one_line(lowp_run({"sweep", "--tensors", "--bos", "on"}), 2, "lowp sweep: --bos belongs to the model sweep with --text");
  if (!fs::exists(kGpt2)) GTEST_SKIP() << "needs " << kGpt2 << " (../shared is absent)";
  expect_one_line(lowp_run({"tokenize", "--model", kGpt2}, "ab\xff"), 1, "lowp tokenize: the text is not valid UTF-8 at byte 2");
  expect_one_line(lowp_run({"tokenize", "--model", kGpt2, "--text", "/nonexistent.txt"}), 1, "lowp tokenize: cannot open");
}

// eval --text: BOS from the tokenizer (auto), or forced on/off: one token more or less.
TEST(CliTokenize, EvalBosOption) {
  const std::string model = shared + "/models/tinyllamas/stories260K.gguf";
  if (!fs::exists(model)) GTEST_SKIP() << "needs " << model << " (../shared is absent)";
  const std::string dir = lowp::test::temp_dir("cli_tokenize_eval");
  lowp::test::write_text(dir + "/t.txt", "Once upon a time there was a little girl named Lily.");
  auto tokens = [&](const std::string& bos) {
    const Result r = lowp_run({"eval", "--model", model, "--text", dir + "/t.txt", "--bos", bos});
    EXPECT_EQ(r.code, 0) << r.err;
    const std::size_t at = r.out.find("tokens    ");
    return at == std::string::npos ? -1 : std::stoi(r.out.substr(at + 10));
  };
  const int on = tokens("on"), off = tokens("off"), autob = tokens("auto");
  EXPECT_GT(off, 5);
  EXPECT_EQ(on, off + 1);
  EXPECT_EQ(autob, on);  // a SentencePiece GGUF: llama.cpp adds BOS
  lowp::test::write_text(dir + "/ids.txt", "1\n2\n3\n");
  expect_one_line(lowp_run({"eval", "--model", model, "--tokens", dir + "/ids.txt", "--bos", "on"}), 2,
                  "lowp eval: --bos applies to --text");
  fs::remove_all(dir);
}

}  // namespace
