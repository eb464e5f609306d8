// Byte-level BPE tokenizers against their references in ../shared/tokenizers: llama.cpp's
// tokenizer test files (ids made with each model's Hugging Face tokenizer) for the GPT-2 and
// DeepSeek-Coder vocabulary-only GGUFs, and Llama 3's tokenizer.json with ids from Hugging
// Face's own implementation. Every one of the 46 strings of each.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <unistd.h>

#include "io/gguf_meta.hpp"
#include "lowp/accuracy/tokenizer.hpp"
#include "lowp/numerics/error.hpp"
#include "model_files.hpp"
#include "support/test_support.hpp"
#include "tokenizer/gguf_vocab.hpp"

namespace {

using namespace lowp::accuracy;
namespace fs = std::filesystem;

const std::string kTok = std::string(LOWP_SHARED_DIR) + "/tokenizers/";

struct BpeCase {
  std::string text;
  std::vector<int> ids;
};

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// .inp: strings each followed by "\n__ggml_vocab_test__\n"; .out: one line of ids per string.
std::vector<BpeCase> read_cases(const std::string& inp, const std::string& out) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  const std::string text = slurp(inp);
  std::vector<BpeCase> cases;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t e = text.find(sep, at);
    if (e == std::string::npos) break;
    cases.push_back({text.substr(at, e - at), {}});
    at = e + sep.size();
  }
  std::istringstream o(slurp(out));
  std::string line;
  for (auto& c : cases) {
    if (!std::getline(o, line)) break;
    std::istringstream l(line);
    for (int id; l >> id;) c.ids.push_back(id);
  }
  return cases;
}

void expect_all(const Tokenizer& t, const std::string& inp, const std::string& out) {
  const auto cases = read_cases(inp, out);
  ASSERT_EQ(cases.size(), 46u) << inp;
  int nonempty = 0;
  for (const auto& c : cases) {
    EXPECT_EQ(t.encode(c.text, false), c.ids) << "text: '" << c.text << "'";
    nonempty += !c.ids.empty();
  }
  EXPECT_GE(nonempty, 44);  // the reference really holds ids
}

#define SKIP_WITHOUT(path) \
  if (!fs::exists(path)) GTEST_SKIP() << "needs " << (path) << " (../shared is absent)"

TEST(TokenizerBpe, Gpt2GgufMatchesLlamaCppTestFile) {
  const std::string f = kTok + "gguf-vocab/ggml-vocab-gpt-2.gguf";
  SKIP_WITHOUT(f);
  const Tokenizer t = load_gguf_tokenizer(f);
  EXPECT_EQ(t.vocab_size(), 50257);
  expect_all(t, f + ".inp", f + ".out");
  EXPECT_FALSE(t.add_bos());  // llama.cpp's default for the gpt-2 pre-tokenizer
}

TEST(TokenizerBpe, DeepseekCoderGgufMatchesLlamaCppTestFile) {
  const std::string f = kTok + "gguf-vocab/ggml-vocab-deepseek-coder.gguf";
  SKIP_WITHOUT(f);
  const Tokenizer t = load_gguf_tokenizer(f);
  expect_all(t, f + ".inp", f + ".out");
}

TEST(TokenizerBpe, Llama3TokenizerJsonMatchesHuggingFace) {
  const std::string f = kTok + "llama3/tokenizer.json";
  SKIP_WITHOUT(f);
  const Tokenizer t = load_hf_tokenizer(f);
  EXPECT_EQ(t.vocab_size(), 128256);
  expect_all(t, kTok + "llama3/llama3.inp", kTok + "llama3/llama3.out");
  EXPECT_EQ(t.bos(), 128000);  // tokenizer_config.json's bos_token <|begin_of_text|>
  EXPECT_TRUE(t.add_bos());
  EXPECT_EQ(t.encode("Hello", true), (std::vector<int>{128000, 9906}));
}

// What lowp writes for a fine-tuned model's exports holds the same tokenizer: a GGUF `gpt2`
// vocabulary written as tokenizer.json + tokenizer_config.json still gives the reference ids of
// all 46 strings. Mutant: the pre-tokenizer's Split steps left out of tokenizer.json
// (DeepSeek-Coder's digit and CJK splits change).
TEST(TokenizerBpe, WrittenTokenizerJsonMatchesTheReferences) {
  const std::string dir = lowp::test::temp_dir("bpe_written");
  for (const char* name : {"gpt-2", "deepseek-coder"}) {
    const std::string f = kTok + "gguf-vocab/ggml-vocab-" + name + ".gguf";
    SKIP_WITHOUT(f);
    for (const auto& [file, bytes] : lowp::accuracy::detail::tokenizer_files(load_gguf_tokenizer(f))) {
      std::ofstream o(dir + "/" + file, std::ios::binary);
      o.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
    const Tokenizer t = load_hf_tokenizer(dir + "/tokenizer.json");
    expect_all(t, f + ".inp", f + ".out");
    EXPECT_EQ(t.add_bos(), load_gguf_tokenizer(f).add_bos()) << name;
  }
  std::filesystem::remove_all(dir);
}

// Llama 3's tokenizer.json written as GGUF tokenizer.ggml.* entries (pre llama-bpe, merges by
// rank) still gives Hugging Face's ids of all 46 strings. Mutant: the merges written unsorted.
TEST(TokenizerBpe, WrittenGgufVocabularyMatchesLlama3) {
  const std::string f = kTok + "llama3/tokenizer.json";
  SKIP_WITHOUT(f);
  const Tokenizer hf = load_hf_tokenizer(f);
  std::vector<std::uint8_t> gguf;
  auto put = [&](auto v) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
    gguf.insert(gguf.end(), p, p + sizeof v);
  };
  const auto kvs = lowp::accuracy::detail::gguf_vocab(hf, hf.vocab_size());
  put(std::uint32_t{0x46554747}), put(std::uint32_t{3}), put(std::uint64_t{0}), put(std::uint64_t{kvs.size()});
  lowp::accuracy::detail::append_gguf_kvs(gguf, kvs);
  const Tokenizer t = load_gguf_tokenizer_bytes(gguf, "llama3.gguf");
  expect_all(t, kTok + "llama3/llama3.inp", kTok + "llama3/llama3.out");
  EXPECT_EQ(t.bos(), 128000);
  EXPECT_TRUE(t.add_bos());
}

// Decoding a byte-level BPE gives the text back byte for byte, multi-byte characters included.
TEST(TokenizerBpe, ByteLevelRoundTrip) {
  const std::string f = kTok + "gguf-vocab/ggml-vocab-gpt-2.gguf";
  SKIP_WITHOUT(f);
  const Tokenizer t = load_gguf_tokenizer(f);
  for (const auto& c : read_cases(f + ".inp", f + ".out")) EXPECT_EQ(t.decode(t.encode(c.text, false)), c.text);
  EXPECT_EQ(t.decode(std::vector<int>{15496, 995}), "Hello world");
}

TEST(TokenizerBpe, InvalidUtf8IsOneLineError) {
  const std::string f = kTok + "gguf-vocab/ggml-vocab-gpt-2.gguf";
  SKIP_WITHOUT(f);
  const Tokenizer t = load_gguf_tokenizer(f);
  lowp::test::expect_error([&] { t.encode("ab\xC3(", false); }, {"not valid UTF-8 at byte 2"});
  lowp::test::expect_error([&] { t.encode("\xED\xA0\x80", false); }, {"not valid UTF-8 at byte 0"});  // a surrogate
}

// Hand-made tokenizer.json files: what lowp reads and what it refuses, in one line naming the file.
TEST(TokenizerBpe, HfJsonFeaturesAndErrors) {
  const fs::path dir = fs::temp_directory_path() / ("lowp_test_hfjson_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& model, const std::string& pre = "null",
                   const std::string& extra = "") {
    const fs::path p = dir / name;
    std::ofstream(p) << "{\"added_tokens\": [{\"id\": 5, \"content\": \"<eos>\", \"special\": true}, "
                        "{\"id\": 6, \"content\": \"xyz\", \"special\": false}], "
                     << "\"pre_tokenizer\": " << pre << ", " << extra << "\"model\": " << model << "}";
    return p.string();
  };
  // Digits (one by one) then a literal Split on "-"; "xyz" is a non-special added token, matched
  // in the raw text; "<eos>" is special and is not.
  const std::string bpe =
      R"({"type": "BPE", "vocab": {"1": 0, "2": 1, "12": 2, "-": 3, "a": 4, "<": 7, "e": 8, "o": 9, "s": 10, ">": 11}, )"
      R"("merges": [["1", "2"]]})";
  const Tokenizer t = load_hf_tokenizer(write(
      "ok.json", bpe,
      R"({"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": true}, )"
      R"({"type": "Split", "pattern": {"String": "-"}, "behavior": "Isolated", "invert": false}]})"));
  EXPECT_EQ(t.vocab_size(), 12);
  EXPECT_FALSE(t.add_bos());
  EXPECT_EQ(t.encode("12-a", false), (std::vector<int>{0, 1, 3, 4}));  // digits apart: no "12"
  EXPECT_EQ(t.encode("axyz-<eos>", false), (std::vector<int>{4, 6, 3, 7, 8, 9, 10, 11}));
  const Tokenizer whole = load_hf_tokenizer(write("whole.json", bpe));
  EXPECT_EQ(whole.encode("12-a", false), (std::vector<int>{2, 3, 4}));
  lowp::test::expect_error([&] { whole.encode("b", false); }, {"cannot encode 'b'"});

  const std::string f1 = write("wp.json", R"({"type": "WordPiece", "vocab": {"a": 0}})");
  lowp::test::expect_error([&] { load_hf_tokenizer(f1); }, {f1, "tokenizer model 'WordPiece' is not supported"});
  const std::string f2 = write("pre.json", bpe, R"({"type": "Whitespace"})");
  lowp::test::expect_error([&] { load_hf_tokenizer(f2); }, {f2, "pre-tokenizer 'Whitespace' is not supported"});
  const std::string f3 = write("merge.json", R"({"type": "BPE", "vocab": {"a": 0}, "merges": ["ab"]})");
  lowp::test::expect_error([&] { load_hf_tokenizer(f3); }, {f3, "merge 0 'ab' is not two pieces"});
  const std::string f4 = write("id.json", R"({"type": "BPE", "vocab": {"a": 4000000}, "merges": []})");
  lowp::test::expect_error([&] { load_hf_tokenizer(f4); }, {f4, "token id 4000000", "far beyond"});
  const std::string f5 = write("re.json", bpe, R"({"type": "Split", "pattern": {"Regex": "(a"}, "behavior": "Isolated"})");
  lowp::test::expect_error([&] { load_hf_tokenizer(f5); }, {f5, "regex", "does not compile"});
  const std::string f6 = write("norm.json", bpe, "null", R"("normalizer": {"type": "Lowercase"}, )");
  lowp::test::expect_error([&] { load_hf_tokenizer(f6); }, {f6, "normalizer 'Lowercase' is not supported"});
  const std::string f7 = (dir / "trunc.json").string();
  std::ofstream(f7) << R"({"model": {"type": "BPE", "vocab": {"a": )";
  lowp::test::expect_error([&] { load_hf_tokenizer(f7); }, {f7, "bad JSON at byte"});
  fs::remove_all(dir);
}

}  // namespace
