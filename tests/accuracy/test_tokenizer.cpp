// Tokenizers: hand-worked BPE merges, a naive llama2.c-style reference encoder, round trips,
// llama2.c tokenizer.bin and GGUF vocabularies, byte-level, token-id files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "loader_test_util.hpp"
#include "lowp/accuracy/tokenizer.hpp"
#include "model_files.hpp"
#include "support/test_support.hpp"

namespace {

using namespace lowp::accuracy;
using namespace lowp::test;
using TT = Tokenizer::TokenType;

// <unk>, <s>, </s>, 256 byte pieces (ids 3..258), then the pieces given with their scores.
TestVocab make_vocab(const std::vector<std::pair<std::string, float>>& extra) {
  TestVocab v;
  v.pieces = {"<unk>", "<s>", "</s>"};
  v.scores = {0, 0, 0};
  v.types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    v.pieces.push_back(buf);
    v.scores.push_back(0);
    v.types.push_back(6);
  }
  for (const auto& [p, s] : extra) {
    v.pieces.push_back(p);
    v.scores.push_back(s);
    v.types.push_back(1);
  }
  return v;
}

Tokenizer make_tokenizer(const TestVocab& v) {
  std::vector<TT> types;
  for (auto t : v.types) types.push_back(static_cast<TT>(t));
  return Tokenizer(v.pieces, v.scores, types, 1, 2, 0, "test vocab");
}

// ids: " "=259 "a"=260 "b"=261 "c"=262 "ab"=263 "bc"=264 " a"=265 " ab"=266 "abc"=267 "aa"=268
const std::vector<std::pair<std::string, float>> kPieces = {
    {" ", -10}, {"a", -10}, {"b", -10}, {"c", -10}, {"ab", -1}, {"bc", -2},
    {" a", -3}, {" ab", -4}, {"abc", -0.5f}, {"aa", -1}};

TEST(Tokenizer, HandWorkedMerges) {
  const Tokenizer t = make_tokenizer(make_vocab(kPieces));
  // " abc": pairs " a" -3, "ab" -1, "bc" -2 -> "ab"; then " ab" -4, "abc" -0.5 -> "abc".
  EXPECT_EQ(t.encode("abc"), (std::vector<int>{1, 259, 267}));
  // " bcab": "ab" -1 beats "bc" -2; then "bc"; " bc" and "bcab" are not pieces.
  EXPECT_EQ(t.encode("bcab"), (std::vector<int>{1, 259, 264, 263}));
  // " aaa": two "aa" at -1 tie: the leftmost merges; " aa" / "aaa" are not pieces.
  EXPECT_EQ(t.encode("aaa"), (std::vector<int>{1, 259, 268, 260}));
  // "€" (E2 82 AC) is not a piece: byte fallback to ids 3 + byte.
  EXPECT_EQ(t.encode("a\xE2\x82\xAC", false, true), (std::vector<int>{265, 3 + 0xE2, 3 + 0x82, 3 + 0xAC, 2}));
  EXPECT_EQ(t.encode(""), (std::vector<int>{1}));
  EXPECT_EQ(t.encode("", false), (std::vector<int>{}));
  // Decoding: the dummy-prefix space goes, byte tokens become bytes, controls print nothing.
  EXPECT_EQ(t.decode(std::vector<int>{1, 259, 267}), "abc");
  EXPECT_EQ(t.decode(std::vector<int>{265, 3 + 0xE2, 3 + 0x82, 3 + 0xAC, 2}), "a\xE2\x82\xAC");
  EXPECT_EQ(t.decode_token(1, 265), "a");   // llama2.c: no leading space right after <s>
  EXPECT_EQ(t.decode_token(260, 265), " a");
  EXPECT_EQ(t.decode_token(260, 3 + 'Q'), "Q");
  EXPECT_EQ(t.decode_token(260, 2), "");
  expect_error([&] { t.decode_token(1, 100000); }, {"token id 100000 is outside the vocabulary"});
  expect_error([&] { t.piece(-1); }, {"token id -1 is outside the vocabulary (269)"});
}

// llama2.c's encoder, transcribed naively: O(n^2) rescans for the best pair each round.
std::vector<int> naive_encode(const TestVocab& v, const std::string& text) {
  auto find = [&](const std::string& s) {
    for (std::size_t i = 0; i < v.pieces.size(); ++i)
      if (v.types[i] == 1 && v.pieces[i] == s) return static_cast<int>(i);
    return -1;
  };
  std::vector<int> toks;
  std::vector<std::string> text_of;  // the text of each token ("" for byte fallbacks: unmergeable)
  const std::string s = text.empty() ? text : " " + text;  // llama2.c: no dummy prefix for ""
  for (std::size_t i = 0; i < s.size();) {
    std::size_t n = 1;
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0xC0 && c < 0xE0) n = 2;
    else if (c >= 0xE0 && c < 0xF0) n = 3;
    else if (c >= 0xF0 && c < 0xF8) n = 4;
    bool valid = i + n <= s.size();
    for (std::size_t k = 1; valid && k < n; ++k) valid = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (!valid) n = 1;
    const std::string ch = s.substr(i, n);
    if (const int id = find(ch); id >= 0) {
      toks.push_back(id);
      text_of.push_back(ch);
    } else {
      for (char b : ch) {
        toks.push_back(3 + static_cast<unsigned char>(b));
        text_of.push_back("");
      }
    }
    i += n;
  }
  while (true) {
    float best = -1e30f;
    int best_id = -1, best_i = -1;
    for (std::size_t i = 0; i + 1 < toks.size(); ++i) {
      if (text_of[i].empty() || text_of[i + 1].empty()) continue;
      const int id = find(text_of[i] + text_of[i + 1]);
      if (id >= 0 && v.scores[id] > best) {
        best = v.scores[id];
        best_id = id;
        best_i = static_cast<int>(i);
      }
    }
    if (best_id < 0) break;
    toks[best_i] = best_id;
    text_of[best_i] += text_of[best_i + 1];
    toks.erase(toks.begin() + best_i + 1);
    text_of.erase(text_of.begin() + best_i + 1);
  }
  return toks;
}

TEST(Tokenizer, MatchesNaiveEncoderAndRoundTrips) {
  // A richer vocabulary with random scores over a small alphabet, some multi-byte pieces.
  SplitMix rng{7};
  const std::vector<std::string> alphabet = {" ", "a", "b", "c", "d", "\n", "\xC3\xA9" /* é */, "\xE2\x96\x81"};
  std::vector<std::pair<std::string, float>> pieces;
  std::vector<std::string> seen;
  for (const auto& a : alphabet) seen.push_back(a);
  for (int k = 0; k < 120; ++k) {
    const std::string p = seen[rng.next() % seen.size()] + seen[rng.next() % seen.size()];
    if (std::find(seen.begin(), seen.end(), p) == seen.end()) seen.push_back(p);
  }
  for (const auto& p : seen)
    if (p != "\n") pieces.push_back({p, -static_cast<float>(rng.next() % 1000) / 10.0f});  // "\n": byte fallback
  const TestVocab v = make_vocab(pieces);
  const Tokenizer t = make_tokenizer(v);
  const std::vector<std::string> chars = {" ", "a", "b", "c", "d", "\n", "\xC3\xA9", "\xE2\x82\xAC", "\xFF", "\xC3"};
  for (int trial = 0; trial < 300; ++trial) {
    std::string s;
    const int len = static_cast<int>(rng.next() % 40);
    for (int i = 0; i < len; ++i) s += chars[rng.next() % chars.size()];
    const auto ids = t.encode(s, false);
    EXPECT_EQ(ids, naive_encode(v, s)) << "'" << s << "'";
    EXPECT_EQ(t.decode(ids), s);
  }
}

TEST(Tokenizer, ByteLevel) {
  const Tokenizer t = Tokenizer::byte_level(300);
  EXPECT_EQ(t.vocab_size(), 258);
  EXPECT_EQ(t.encode("hi\xFF", true, true), (std::vector<int>{256, 'h', 'i', 255, 257}));
  EXPECT_EQ(t.decode(std::vector<int>{256, ' ', 'h', 0, 255, 257}), std::string(" h\0\xFF", 4));
  const Tokenizer bare = Tokenizer::byte_level(256);
  EXPECT_EQ(bare.bos(), -1);
  EXPECT_EQ(bare.encode("A"), (std::vector<int>{'A'}));
  expect_error([] { Tokenizer::byte_level(255); }, {"at least 256", "255"});
}

TEST(Tokenizer, Llama2cFile) {
  const TestVocab v = make_vocab(kPieces);
  const int n = static_cast<int>(v.pieces.size());
  const auto bytes = llama2c_tokenizer_bytes(v);
  const Tokenizer t = load_llama2c_tokenizer_bytes(bytes, n, "tok.bin");
  ASSERT_EQ(t.vocab_size(), n);
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(t.piece(i), v.pieces[i]);
    EXPECT_EQ(t.score(i), v.scores[i]);
  }
  EXPECT_EQ(t.bos(), 1);
  EXPECT_EQ(t.eos(), 2);
  EXPECT_EQ(t.encode("abc"), (std::vector<int>{1, 259, 267}));
  EXPECT_EQ(t.encode("bcab"), (std::vector<int>{1, 259, 264, 263}));

  auto load = [&](const std::vector<std::uint8_t>& b, int vocab = -1) {
    return load_llama2c_tokenizer_bytes(b, vocab < 0 ? n : vocab, "tok.bin");
  };
  for (std::size_t k = 0; k < 4; ++k)
    expect_error([&] { load({bytes.begin(), bytes.begin() + k}); }, {"tok.bin", "max_token_length", "runs past the end"});
  // Shorter than 8 bytes per token: refused before reading any token.
  expect_error([&] { load({bytes.begin(), bytes.begin() + 10}); }, {"tok.bin", "vocab_size 269 needs more tokens than the file can hold"});
  expect_error([&] { load({bytes.begin(), bytes.begin() + 4 + 8 * 269}); }, {"tok.bin", "token", "runs past the end"});
  expect_error([&] { load({bytes.begin(), bytes.end() - 1}); }, {"tok.bin", "token 268 text", "runs past the end"});
  expect_error([&] { load(patched<std::int32_t>(bytes, 0, 0)); }, {"tok.bin", "max_token_length is 0"});
  expect_error([&] { load(patched<std::int32_t>(bytes, 8, -5)); }, {"tok.bin", "token 0 length -5 is outside"});
  expect_error([&] { load(patched<std::int32_t>(bytes, 8, 7)); }, {"tok.bin", "token 0 length 7 is outside [0, max_token_length 6]"});
  expect_error([&] { load(patched<float>(bytes, 4, NAN)); }, {"tok.bin", "token 0 score is not finite"});
  expect_error([&] { load(bytes, n - 1); }, {"tok.bin", "holds more than the model's 268 tokens"});
  expect_error([&] { load(bytes, 1 << 30); }, {"tok.bin", "needs more tokens than the file can hold"});
  expect_error([&] { load(bytes, 2); }, {"tok.bin", "vocab_size 2 is too small"});
}

TEST(Tokenizer, GgufVocabulary) {
  const TestVocab v = make_vocab(kPieces);
  LlamaConfig c = small_config(16, 24, static_cast<int>(v.pieces.size()));
  const LlamaModel m = random_model(c, 50);
  GgufOptions o;
  o.vocab = &v;
  const auto bytes = gguf_bytes(m, o);
  const Tokenizer t = load_gguf_tokenizer_bytes(bytes, "m.gguf");
  ASSERT_EQ(t.vocab_size(), c.vocab_size);
  EXPECT_EQ(t.piece(265), " a");  // U+2581 in the file, a space in memory
  EXPECT_EQ(t.encode("abc"), (std::vector<int>{1, 259, 267}));
  EXPECT_EQ(t.encode("bcab"), (std::vector<int>{1, 259, 264, 263}));
  EXPECT_EQ(t.decode(t.encode("ab c\xE2\x82\xAC")), "ab c\xE2\x82\xAC");

  const std::size_t model = find_bytes(bytes, "tokenizer.ggml.model") + 20 + 4 + 8;
  auto gpt2 = bytes;
  std::memcpy(gpt2.data() + model, "gpt2x", 5);
  expect_error([&] { load_gguf_tokenizer_bytes(gpt2, "m.gguf"); },
               {"m.gguf", "tokenizer model 'gpt2x' is not supported"});
  expect_error([&] { load_gguf_tokenizer(std::string(LOWP_SHARED_DIR) + "/nonexistent.gguf"); }, {"cannot open"});
  const auto plain = gguf_bytes(m);
  expect_error([&] { load_gguf_tokenizer_bytes(plain, "p.gguf"); }, {"p.gguf", "has no tokenizer"});
  const std::size_t bos = find_bytes(bytes, "tokenizer.ggml.bos_token_id") + 27 + 4;
  expect_error([&] { load_gguf_tokenizer_bytes(patched<std::uint32_t>(bytes, bos, 5000), "m.gguf"); },
               {"m.gguf", "tokenizer.ggml.bos_token_id 5000 is outside the vocabulary (269 tokens)"});
  const std::size_t types = find_bytes(bytes, "tokenizer.ggml.token_type") + 25 + 4 + 4 + 8;
  expect_error([&] { load_gguf_tokenizer_bytes(patched<std::int32_t>(bytes, types, 9), "m.gguf"); },
               {"m.gguf", "token_type entry 0 is 9"});
  TestVocab few = v;
  few.scores.resize(3);
  GgufOptions of;
  of.vocab = &few;
  expect_error([&] { load_gguf_tokenizer_bytes(gguf_bytes(m, of), "m.gguf"); },
               {"m.gguf", "tokenizer.ggml.scores has 3 entries for 269 tokens"});
}

TEST(Tokenizer, ForModel) {
  const std::string dir = temp_dir("tok_for_model");
  const TestVocab v = make_vocab(kPieces);
  const LlamaModel m = random_model(small_config(16, 24, static_cast<int>(v.pieces.size())), 51);
  GgufOptions o;
  o.vocab = &v;
  write_file(dir + "/m.gguf", gguf_bytes(m, o));
  EXPECT_FALSE(tokenizer_for_model(dir + "/m.gguf", m.config.vocab_size).is_byte_level());
  EXPECT_EQ(tokenizer_for_model(dir + "/m.gguf", m.config.vocab_size).encode("abc"), (std::vector<int>{1, 259, 267}));
  write_llama2c(dir + "/m.bin", m);
  EXPECT_TRUE(tokenizer_for_model(dir + "/m.bin", m.config.vocab_size).is_byte_level());
  write_file(dir + "/tokenizer.bin", llama2c_tokenizer_bytes(v));
  EXPECT_EQ(tokenizer_for_model(dir + "/m.bin", m.config.vocab_size).encode("bcab"), (std::vector<int>{1, 259, 264, 263}));
  std::filesystem::remove(dir + "/tokenizer.bin");
  EXPECT_THROW(tokenizer_for_model(dir + "/m.bin", 100), NoTokenizer);  // the CLI adds what to do instead
  std::filesystem::remove_all(dir);
}

TEST(TokenFile, Parse) {
  EXPECT_EQ(parse_token_ids("1\n2\n\n 3 \r\n", 0, "t.txt"), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(parse_token_ids("7", 8, "t.txt"), (std::vector<int>{7}));
  expect_error([] { parse_token_ids("1\nx\n", 0, "t.txt"); }, {"t.txt:2: 'x' is not a token id"});
  expect_error([] { parse_token_ids("1\n2 3\n", 0, "t.txt"); }, {"t.txt:2: '2 3' is not a token id"});
  expect_error([] { parse_token_ids("-1\n", 0, "t.txt"); }, {"t.txt:1: '-1'"});
  expect_error([] { parse_token_ids("99999999999\n", 0, "t.txt"); }, {"t.txt:1: '99999999999'"});
  expect_error([] { parse_token_ids("1\n\n600\n", 512, "t.txt"); }, {"t.txt:3: token id 600 is outside the vocabulary (512)"});
  expect_error([] { parse_token_ids("", 0, "t.txt"); }, {"t.txt: no token ids"});
  expect_error([] { parse_token_ids("\n \n", 0, "t.txt"); }, {"t.txt: no token ids"});
  expect_error([] { read_token_file("/nonexistent/t.txt"); }, {"/nonexistent/t.txt", "cannot open"});
}

TEST(TokenFile, SharedSequence) {
  const std::string path = std::string(LOWP_SHARED_DIR) + "/data/stories260K_ref/seqA_tokens.txt";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "needs " << path;
  const auto ids = read_token_file(path, 512);
  // Counted independently: one id per non-empty line.
  std::ifstream f(path);
  std::string line;
  std::vector<int> expect;
  while (std::getline(f, line))
    if (!line.empty()) expect.push_back(std::stoi(line));
  EXPECT_EQ(ids, expect);
  EXPECT_EQ(ids.size(), 256u);
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(ids[1], 306);
}

}  // namespace
