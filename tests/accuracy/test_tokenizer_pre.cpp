// The GGUF pre-tokenizer table (tokenizer.ggml.pre), hand-worked: a tiny byte-level vocabulary
// whose few merges make each regex's split visible in the ids. Digits: GPT-2 takes a run of
// digits whole, Llama 3 in groups of three, Qwen2 and DeepSeek-Coder one by one; Mistral-Nemo
// (tekken) splits "HelloWorld" at the capital; Llama 3 and tekken ignore merges for a piece
// that is itself a token. Real vocabularies are checked in test_tokenizer_bpe.cpp.
#include <gtest/gtest.h>

#include <filesystem>

#include "lowp/accuracy/tokenizer.hpp"
#include "model_files.hpp"
#include "support/test_support.hpp"

namespace {

using namespace lowp::accuracy;
using lowp::test::ByteSink;
using lowp::test::byte_char;
using lowp::test::gguf_string;

struct Vocab {
  std::vector<std::string> tokens;  // 0..255: the byte characters, then extra pieces
  std::vector<std::string> merges;
};

// ids: byte b is id b; 256 "12", 257 "123", 258 "34", 259 "oW", 260 "Hello" (no merges reach it).
Vocab test_vocab() {
  Vocab v;
  for (int b = 0; b < 256; ++b) v.tokens.push_back(byte_char(b));
  for (const char* p : {"12", "123", "34", "oW", "Hello"}) v.tokens.push_back(p);
  v.merges = {"3 4", "1 2", "12 3", "o W"};
  return v;
}

std::string write_vocab(const Vocab& v, const std::string& pre, int add_bos = -1) {
  ByteSink s;
  s.put_bytes("GGUF", 4);
  s.put<std::uint32_t>(3);
  s.put<std::uint64_t>(0);  // no tensors
  s.put<std::uint64_t>(pre.empty() ? 5 : 6 + (add_bos >= 0));
  auto str_array = [&](const std::string& key, const std::vector<std::string>& a) {
    gguf_string(s, key);
    s.put<std::uint32_t>(9);
    s.put<std::uint32_t>(8);
    s.put<std::uint64_t>(a.size());
    for (const auto& x : a) gguf_string(s, x);
  };
  gguf_string(s, "general.architecture");
  s.put<std::uint32_t>(8);
  gguf_string(s, "llama");
  gguf_string(s, "tokenizer.ggml.model");
  s.put<std::uint32_t>(8);
  gguf_string(s, "gpt2");
  if (!pre.empty()) {
    gguf_string(s, "tokenizer.ggml.pre");
    s.put<std::uint32_t>(8);
    gguf_string(s, pre);
  }
  str_array("tokenizer.ggml.tokens", v.tokens);
  str_array("tokenizer.ggml.merges", v.merges);
  gguf_string(s, "tokenizer.ggml.bos_token_id");
  s.put<std::uint32_t>(4);
  s.put<std::uint32_t>(0);
  if (!pre.empty() && add_bos >= 0) {
    gguf_string(s, "tokenizer.ggml.add_bos_token");
    s.put<std::uint32_t>(7);
    s.put<std::uint8_t>(static_cast<std::uint8_t>(add_bos));
  }
  const std::string dir = lowp::test::temp_dir("tok_pre");
  const std::string path = dir + "/" + (pre.empty() ? "none" : pre) + ".gguf";
  lowp::test::write_file(path, s.b);
  return path;
}

std::vector<int> bytes(const std::string& s) {
  std::vector<int> r;
  for (char c : s) r.push_back(static_cast<unsigned char>(c));
  return r;
}

std::vector<int> encode(const std::string& pre, const std::string& text) {
  return load_gguf_tokenizer(write_vocab(test_vocab(), pre)).encode(text, false);
}

TEST(TokenizerPre, DigitGroupsPerPreTokenizer) {
  const std::vector<int> whole = {256, 258, '5'};       // "12345" one piece: "3 4" first, then "1 2"
  const std::vector<int> threes = {257, '4', '5'};      // "123" | "45"
  const std::vector<int> singles = bytes("12345");      // every digit its own piece
  EXPECT_EQ(encode("gpt-2", "12345"), whole);
  EXPECT_EQ(encode("deepseek-llm", "12345"), whole);
  EXPECT_EQ(encode("llama-bpe", "12345"), threes);
  EXPECT_EQ(encode("default", "12345"), threes);        // its last regex: [0-9][0-9][0-9]
  EXPECT_EQ(encode("qwen2", "12345"), singles);
  EXPECT_EQ(encode("deepseek-coder", "12345"), singles);
  EXPECT_EQ(encode("tekken", "12345"), singles);
}

TEST(TokenizerPre, CaseSplitAndIgnoreMerges) {
  const std::vector<int> joined = {'H', 'e', 'l', 'l', 259, 'o', 'r', 'l', 'd'};  // the "o W" merge
  EXPECT_EQ(encode("gpt-2", "HelloWorld"), joined);
  EXPECT_EQ(encode("qwen2", "HelloWorld"), joined);
  EXPECT_EQ(encode("tekken", "HelloWorld"), (std::vector<int>{260, 'W', 'o', 'r', 'l', 'd'}));  // "Hello" | "World"
  // "Hello" is a token no merge reaches: Llama 3 and tekken take it whole, GPT-2 does not.
  EXPECT_EQ(encode("llama3", "Hello"), (std::vector<int>{260}));
  EXPECT_EQ(encode("gpt-2", "Hello"), bytes("Hello"));
  // A space starts the next word: " W" is its own piece, so "o W" cannot merge.
  EXPECT_EQ(encode("gpt-2", "o W"), (std::vector<int>{'o', ' ', 'W'}));
}

TEST(TokenizerPre, BosDefaultsAndOverride) {
  EXPECT_TRUE(load_gguf_tokenizer(write_vocab(test_vocab(), "llama-bpe")).add_bos());
  EXPECT_TRUE(load_gguf_tokenizer(write_vocab(test_vocab(), "tekken")).add_bos());
  EXPECT_FALSE(load_gguf_tokenizer(write_vocab(test_vocab(), "gpt-2")).add_bos());
  EXPECT_FALSE(load_gguf_tokenizer(write_vocab(test_vocab(), "llama-bpe", 0)).add_bos());
  EXPECT_TRUE(load_gguf_tokenizer(write_vocab(test_vocab(), "gpt-2", 1)).add_bos());
  // No tokenizer.ggml.pre: llama.cpp's "default".
  EXPECT_EQ(load_gguf_tokenizer(write_vocab(test_vocab(), "")).encode("12345", false), (std::vector<int>{257, '4', '5'}));
}

TEST(TokenizerPre, UnknownPreIsRefused) {
  const std::string f = write_vocab(test_vocab(), "no-such-pre");
  lowp::test::expect_error([&] { load_gguf_tokenizer(f); }, {f, "pre-tokenizer 'no-such-pre'", "not supported"});
  Vocab bad = test_vocab();
  bad.merges.push_back("nospace");
  const std::string g = write_vocab(bad, "gpt-2");
  lowp::test::expect_error([&] { load_gguf_tokenizer(g); }, {g, "merges entry 4 'nospace' is not two pieces"});
  std::filesystem::remove_all(std::filesystem::path(f).parent_path());
}

}  // namespace
