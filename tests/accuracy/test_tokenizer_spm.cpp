// SentencePiece tokenizer.model files: a tiny BPE model trained here with the library's own
// trainer (no .model file ships with Debian or ../shared). lowp encodes through the library;
// the oracle is lowp's independent score-ordered SPM merger (the GGUF "llama" path, the
// algorithm llama.cpp uses) on the same pieces and scores, plus the library's documented
// behaviour: byte fallback to <0xNN> pieces, ids 0/1/2 for <unk>/<s>/</s>, and round trips.
#include <gtest/gtest.h>
#include <sentencepiece_trainer.h>

#include <cstdio>
#include <algorithm>
#include <filesystem>
#include <map>
#include <fstream>
#include <stdexcept>
#include <unistd.h>

#include "lowp/accuracy/tokenizer.hpp"
#include "spm_lines.hpp"
#include "support/test_support.hpp"

namespace {

using namespace lowp::accuracy;
namespace fs = std::filesystem;
using TT = Tokenizer::TokenType;

const std::vector<std::string> kCorpus = {
    "the quick brown fox jumps over the lazy dog",
    "a tokenizer splits the text into pieces that the model knows",
    "the lazy dog sleeps in the sun while the brown fox runs",
    "pieces merge into longer pieces when they are frequent",
    "numbers like 12 and 345 are text too",
};

// A folder in the temp directory, removed when the test program ends.
const fs::path& temp_dir() {
  static const struct Dir {
    fs::path p = fs::temp_directory_path() / ("lowp_test_spm_" + std::to_string(::getpid()));
    Dir() { fs::create_directories(p); }
    ~Dir() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } d;
  return d.p;
}

// Trains once per test program.
const std::string& model_path() {
  static const std::string path = [] {
    const fs::path p = temp_dir() / "tokenizer.model";
    std::vector<std::string> corpus;
    for (int r = 0; r < 20; ++r) corpus.insert(corpus.end(), kCorpus.begin(), kCorpus.end());
    lowp::test::SpmLines it(corpus);
    std::string proto;
    // identity normalization and kept whitespace: the text reaches the BPE unchanged, as the
    // GGUF SPM path sees it.
    const auto st = sentencepiece::SentencePieceTrainer::Train(
        "--model_type=bpe --vocab_size=330 --byte_fallback=true --character_coverage=1.0 "
        "--normalization_rule_name=identity --remove_extra_whitespaces=false --hard_vocab_limit=false "
        "--minloglevel=2",
        &it, &proto);
    if (!st.ok()) throw std::runtime_error("sentencepiece training failed: " + st.ToString());
    std::ofstream f(p, std::ios::binary);
    f << proto;
    return p.string();
  }();
  return path;
}

TEST(TokenizerSentencePiece, LibraryModelLoadsWithItsSpecialIds) {
  const Tokenizer t = load_sentencepiece_model(model_path());
  EXPECT_GE(t.vocab_size(), 3 + 256 + 20);
  EXPECT_EQ(t.bos(), 1);
  EXPECT_EQ(t.eos(), 2);
  EXPECT_TRUE(t.add_bos());  // llama.cpp's default for SentencePiece vocabularies
  EXPECT_EQ(t.piece(3), "<0x00>");  // byte pieces follow the three specials
  EXPECT_EQ(t.piece(3 + 255), "<0xFF>");
}

// The library's encoding equals lowp's own score-ordered merger on the same vocabulary.
TEST(TokenizerSentencePiece, MatchesIndependentSpmMerger) {
  const Tokenizer sp = load_sentencepiece_model(model_path());
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::vector<TT> types;
  for (int id = 0; id < sp.vocab_size(); ++id) {
    pieces.push_back(sp.piece(id));
    scores.push_back(sp.score(id));
    types.push_back(id == 0 ? TT::unknown : id <= 2 ? TT::control : TT::normal);  // <0xNN> are found by spelling
  }
  const Tokenizer ref(pieces, scores, types, 1, 2, 0, "reference");
  const std::vector<std::string> texts = {
      "the quick brown fox",    "pieces merge into longer pieces", "numbers 12 345 6789",
      "  two  spaces, commas!", "unseen: \xE2\x82\xAC and \xE4\xB8\xAD\xE6\x96\x87", "x",
      "the lazy dog sleeps in the sun while the brown fox runs over the tokenizer",
  };
  int merged = 0;
  for (const auto& s : texts) {
    const auto ids = sp.encode(s, true);
    EXPECT_EQ(ids, ref.encode(s, true)) << s;
    EXPECT_EQ(sp.decode(ids), s);
    merged += ids.size() < s.size();
  }
  EXPECT_GE(merged, 3);  // the model really merges
}

// Characters the model never saw become their UTF-8 bytes as <0xNN> tokens (byte_fallback).
TEST(TokenizerSentencePiece, ByteFallback) {
  const Tokenizer t = load_sentencepiece_model(model_path());
  const auto ids = t.encode("\xE2\x82\xAC", false);  // the euro sign: E2 82 AC
  ASSERT_GE(ids.size(), 3u);
  const std::vector<int> tail(ids.end() - 3, ids.end());
  EXPECT_EQ(tail, (std::vector<int>{3 + 0xE2, 3 + 0x82, 3 + 0xAC}));
  EXPECT_EQ(t.decode(ids), "\xE2\x82\xAC");
}

TEST(TokenizerSentencePiece, BadFilesAreOneLineErrors) {
  const fs::path p = temp_dir() / "bad.model";
  {
    std::ofstream f(p, std::ios::binary);
    f << "not a protobuf \xff\xff\xff";
  }
  lowp::test::expect_error([&] { load_sentencepiece_model(p.string()); }, {p.string(), "not a SentencePiece model"});
  lowp::test::expect_error([&] { load_tokenizer(p.string()); }, {"not a SentencePiece model"});
  fs::remove(p);
  lowp::test::expect_error([&] { load_sentencepiece_model("/nonexistent/tokenizer.model"); }, {"/nonexistent/tokenizer.model"});
}

std::string json_string(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      r += '\\';
      r += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(c));
      r += buf;
    } else {
      r += c;
    }
  }
  return r + "\"";
}

// The Hugging Face tokenizer.json of a SentencePiece BPE model, written the way Hugging Face's
// converter writes one (a BPE model with byte fallback; merges of every pair of pieces whose
// concatenation is a piece, ordered by that piece's score; a Prepend + Replace normalizer).
// lowp's tokenizer.json BPE must then give the library's ids.
TEST(TokenizerSentencePiece, HfTokenizerJsonWithByteFallbackMatchesLibrary) {
  const Tokenizer sp = load_sentencepiece_model(model_path());
  const int n = sp.vocab_size();
  std::vector<std::string> raw(n);  // pieces spelled with U+2581
  for (int id = 0; id < n; ++id) {
    for (char c : sp.piece(id)) c == ' ' ? (void)(raw[id] += "\xE2\x96\x81") : (void)(raw[id] += c);
  }
  std::map<std::string, int> index;
  for (int id = 0; id < n; ++id) index.emplace(raw[id], id);
  struct Merge {
    float score;
    int l, r;
  };
  std::vector<Merge> merges;
  for (int id = 3 + 256; id < n; ++id) {
    const std::string& p = raw[id];
    for (std::size_t k = 1; k < p.size(); ++k) {
      const auto a = index.find(p.substr(0, k)), b = index.find(p.substr(k));
      if (a != index.end() && b != index.end() && a->second >= 3 + 256 && b->second >= 3 + 256)
        merges.push_back({sp.score(id), a->second, b->second});
    }
  }
  std::stable_sort(merges.begin(), merges.end(), [](const Merge& x, const Merge& y) {
    return x.score != y.score ? x.score > y.score : (x.l != y.l ? x.l < y.l : x.r < y.r);
  });
  ASSERT_GE(merges.size(), 20u);
  std::string j = "{\"version\": \"1.0\", \"added_tokens\": [";
  for (int id = 0; id < 3; ++id)
    j += std::string(id ? ", " : "") + "{\"id\": " + std::to_string(id) + ", \"content\": " + json_string(raw[id]) +
         ", \"special\": true}";
  const std::string added = j;
  // Older converters: a Prepend + Replace normalizer; newer: a Metaspace pre-tokenizer.
  const std::string normalizer =
      "], \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Prepend\", \"prepend\": "
      "\"\u2581\"}, {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"\u2581\"}]}, "
      "\"pre_tokenizer\": null, ";
  const std::string metaspace =
      "], \"normalizer\": null, \"pre_tokenizer\": {\"type\": \"Metaspace\", \"replacement\": \"\u2581\", "
      "\"prepend_scheme\": \"first\", \"split\": false}, ";
  j = "\"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\", \"byte_fallback\": true, \"vocab\": {";
  for (int id = 0; id < n; ++id) j += std::string(id ? ", " : "") + json_string(raw[id]) + ": " + std::to_string(id);
  j += "}, \"merges\": [";
  for (std::size_t k = 0; k < merges.size(); ++k)
    j += std::string(k ? ", " : "") + json_string(raw[merges[k].l] + " " + raw[merges[k].r]);
  j += "]}}";
  for (int variant = 0; variant < 2; ++variant) {
    const std::string& pre = variant ? metaspace : normalizer;
    const fs::path dir = temp_dir() / (variant ? "hf_meta" : "hf");
    fs::create_directories(dir);
    std::ofstream(dir / "tokenizer.json", std::ios::binary) << added << pre << j;
    std::ofstream(dir / "tokenizer_config.json", std::ios::binary) << R"({"add_bos_token": true, "bos_token": "<s>"})";

    const Tokenizer hf = load_tokenizer(dir.string());
    EXPECT_EQ(hf.vocab_size(), n);
    EXPECT_EQ(hf.bos(), 1);
    EXPECT_TRUE(hf.add_bos());
    for (const std::string s : {"the quick brown fox", "pieces merge into longer pieces", "numbers 12 345 6789",
                                "  two  spaces, commas!", "unseen: \xE2\x82\xAC and \xE4\xB8\xAD\xE6\x96\x87",
                                "the lazy dog sleeps in the sun while the brown fox runs over the tokenizer"}) {
      const auto ids = hf.encode(s, true);
      EXPECT_EQ(ids, sp.encode(s, true)) << s;
      EXPECT_EQ(hf.decode(ids), s);
    }
  }
}

}  // namespace
