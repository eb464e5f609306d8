// `lowp train --init` exports keep the source's tokenizer (issue 28 item 5), in-process: for a
// GGUF, a llama2.c model with tokenizer.bin, an HF folder with tokenizer.json and a byte-level
// model trained from scratch, every export (model.gguf, model.bin, model.safetensors, the folder)
// tokenizes a text as the source does (`lowp tokenize` of the source is the oracle), and
// `lowp eval --text` and `lowp generate --prompt` run on it. The GGUF vocabularies are read back
// by a GGUF reader written here, key by key against the source's own files.
#include <gtest/gtest.h>
#include <sentencepiece_processor.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "../accuracy/model_files.hpp"
#include "../accuracy/spm_lines.hpp"
#include "cli/cli_run.hpp"
#include "lowp/accuracy/loaders.hpp"

namespace {

namespace fs = std::filesystem;
using lowp::test::lowp_run;
using lowp::test::Result;

const std::string shared = LOWP_SHARED_DIR;
const std::string kTiny = shared + "/models/tinyllamas";
const std::string kText = "Once upon a time there was a little girl named Lily. She liked the tent.";

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// ---- a GGUF metadata reader of its own (GGUF v3: little-endian, u64 lengths and counts) ----
struct Value {
  std::uint32_t type = 0;
  std::string raw;  // the encoded value (after the type)
};

class Reader {
 public:
  explicit Reader(std::string b) : b_(std::move(b)) {}
  template <class T>
  T get() {
    T v{};
    if (p_ + sizeof(T) > b_.size()) throw std::runtime_error("GGUF ends early");
    std::memcpy(&v, b_.data() + p_, sizeof(T));
    p_ += sizeof(T);
    return v;
  }
  std::string str() {
    const auto n = get<std::uint64_t>();
    if (p_ + n > b_.size()) throw std::runtime_error("GGUF string ends early");
    std::string s = b_.substr(p_, n);
    p_ += n;
    return s;
  }
  void skip(std::uint32_t type) {
    static const std::map<std::uint32_t, std::size_t> size = {{0, 1}, {1, 1}, {2, 2}, {3, 2}, {4, 4}, {5, 4}, {6, 4},
                                                               {7, 1}, {10, 8}, {11, 8}, {12, 8}};
    if (type == 8) {
      str();
    } else if (type == 9) {
      const auto elem = get<std::uint32_t>();
      const auto n = get<std::uint64_t>();
      for (std::uint64_t k = 0; k < n; ++k) skip(elem);
    } else {
      p_ += size.at(type);
    }
  }
  std::size_t pos() const { return p_; }
  const std::string& bytes() const { return b_; }

 private:
  std::string b_;
  std::size_t p_ = 0;
};

std::map<std::string, Value> gguf_metadata(const std::string& path) {
  Reader r(read_file(path));
  EXPECT_EQ(r.get<std::uint32_t>(), 0x46554747u) << path;
  r.get<std::uint32_t>();  // version
  r.get<std::uint64_t>();  // tensors
  const auto n = r.get<std::uint64_t>();
  std::map<std::string, Value> kv;
  for (std::uint64_t k = 0; k < n; ++k) {
    const std::string key = r.str();
    Value v;
    v.type = r.get<std::uint32_t>();
    const std::size_t start = r.pos();
    r.skip(v.type);
    v.raw = r.bytes().substr(start, r.pos() - start);
    kv[key] = v;
  }
  return kv;
}

std::map<std::string, Value> tokenizer_keys(const std::string& path) {
  std::map<std::string, Value> out;
  for (auto& [k, v] : gguf_metadata(path))
    if (k.rfind("tokenizer.", 0) == 0) out[k] = v;
  return out;
}

// Entry `key` of `got` has the type and the bytes it has in `want`.
void expect_same_entry(const std::map<std::string, Value>& got, const std::map<std::string, Value>& want,
                       const std::string& key) {
  ASSERT_TRUE(want.count(key)) << key;
  ASSERT_TRUE(got.count(key)) << key;
  EXPECT_EQ(got.at(key).type, want.at(key).type) << key;
  EXPECT_TRUE(got.at(key).raw == want.at(key).raw) << key;
}

std::vector<std::string> strings_of(const Value& v) {
  Reader r(v.raw);
  EXPECT_EQ(r.get<std::uint32_t>(), 8u);
  std::vector<std::string> s(r.get<std::uint64_t>());
  for (auto& x : s) x = r.str();
  return s;
}

template <class T>
std::vector<T> numbers_of(const Value& v) {
  Reader r(v.raw);
  r.get<std::uint32_t>();
  std::vector<T> s(r.get<std::uint64_t>());
  for (auto& x : s) x = r.get<T>();
  return s;
}

// llama2.c tokenizer.bin: int32 max length, then per token float32 score, int32 length, bytes.
struct TokenizerBin {
  std::vector<std::string> pieces;
  std::vector<float> scores;
};
TokenizerBin tokenizer_bin(const std::string& path, int n) {
  Reader r(read_file(path));
  r.get<std::int32_t>();
  TokenizerBin t;
  for (int i = 0; i < n; ++i) {
    t.scores.push_back(r.get<float>());
    const auto len = r.get<std::int32_t>();
    std::string p;
    for (int k = 0; k < len; ++k) p += r.get<char>();
    t.pieces.push_back(p);
  }
  EXPECT_EQ(r.pos(), r.bytes().size()) << path;
  return t;
}

std::string spaces_to_u2581(const std::string& s) {
  std::string q;
  for (char c : s) q += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
  return q;
}

// ---- the runs ----
struct Fixture {
  std::string dir, text, corpus;
};

Fixture fixture(const std::string& name) {
  Fixture f;
  f.dir = lowp::test::temp_dir(name);
  f.text = f.dir + "/t.txt";
  lowp::test::write_text(f.text, kText);
  f.corpus = f.dir + "/corpus.txt";
  lowp::test::write_text(f.corpus, read_file(shared + "/data/tinyshakespeare.txt").substr(0, 4000));
  return f;
}

void train_init(const Fixture& f, const std::string& init, const std::string& out) {
  const Result r = lowp_run({"train", "--init", init, "--corpus", f.corpus, "--steps", "1", "--batch", "2", "--ctx", "16",
                             "--out", out, "--threads", "1"});
  ASSERT_EQ(r.code, 0) << r.err;
}

std::string tokenize(const std::string& model, const std::string& text) {
  const Result r = lowp_run({"tokenize", "--model", model, "--text", text, "--bos", "auto"});
  EXPECT_EQ(r.code, 0) << model << ": " << r.err;
  return r.out;
}

// Every export of `out` reads `f.text` as `source_ids` and evaluates and generates from text.
void exports_read_text_as(const Fixture& f, const std::string& out, const std::string& source_ids,
                          const std::vector<std::string>& exports) {
  const auto n = std::count(source_ids.begin(), source_ids.end(), '\n');
  ASSERT_GT(n, 1);
  for (const std::string& e : exports) {
    const std::string model = out + "/" + e;
    EXPECT_EQ(tokenize(model, f.text), source_ids) << e;
    Result r = lowp_run({"eval", "--model", model, "--text", f.text, "--threads", "1"});
    ASSERT_EQ(r.code, 0) << e << ": " << r.err;
    EXPECT_NE(r.out.find("tokens    " + std::to_string(n) + "\n"), std::string::npos) << e << ": " << r.out;
    r = lowp_run({"generate", "--model", model, "--prompt", "Once upon", "--max-tokens", "4", "--threads", "1"});
    ASSERT_EQ(r.code, 0) << e << ": " << r.err;
    EXPECT_EQ(r.out.rfind("Once upon", 0), 0u) << e << ": " << r.out;
  }
}

// (a) GGUF: its tokenizer.* entries byte for byte in model.gguf; tokenizer.bin beside the others,
// which holds the pieces and scores of llama2.c's own tokenizer.bin for the same vocabulary
// (llama2.c spells <s> and </s> "\n<s>\n" and "\n</s>\n"; SentencePiece's GGUF "<s>", "</s>").
// Mutants: the entries left out of model.gguf; scores dropped; tokenizer.bin not written.
TEST(CliTrainExports, GgufSourceKeepsItsVocabulary) {
  const std::string src = kTiny + "/stories260K.gguf";
  if (!fs::exists(src)) GTEST_SKIP() << "needs " << src << " (../shared is absent)";
  const Fixture f = fixture("exports_gguf");
  const std::string out = f.dir + "/run";
  ASSERT_NO_FATAL_FAILURE(train_init(f, src, out));
  const auto want = tokenizer_keys(src), got = tokenizer_keys(out + "/model.gguf");
  ASSERT_GE(want.size(), 5u);
  ASSERT_EQ(got.size(), want.size());
  for (const auto& kv : want) expect_same_entry(got, want, kv.first);
  const TokenizerBin ours = tokenizer_bin(out + "/tokenizer.bin", 512), ref = tokenizer_bin(kTiny + "/tokenizer.bin", 512);
  EXPECT_EQ(ours.scores, ref.scores);
  for (int i = 0; i < 512; ++i)
    if (i != 1 && i != 2) {
      EXPECT_EQ(ours.pieces[i], ref.pieces[i]) << i;
    }
  exports_read_text_as(f, out, tokenize(src, f.text), {"model.gguf", "model.bin", "model.safetensors", "."});
  fs::remove_all(f.dir);
}

// (b) llama2.c model + tokenizer.bin: tokenizer.bin copied as it is; model.gguf's vocabulary is
// llama.cpp's published GGUF of the same vocabulary (stories260K.gguf), key by key but for the
// spelling of <s> and </s> (see above). Mutants: tokenizer.bin not copied; scores dropped.
TEST(CliTrainExports, Llama2cSourceKeepsTokenizerBin) {
  const std::string src = kTiny + "/stories260K.bin";
  if (!fs::exists(src)) GTEST_SKIP() << "needs " << src << " (../shared is absent)";
  const Fixture f = fixture("exports_llama2c");
  const std::string out = f.dir + "/run";
  ASSERT_NO_FATAL_FAILURE(train_init(f, src, out));
  EXPECT_EQ(read_file(out + "/tokenizer.bin"), read_file(kTiny + "/tokenizer.bin"));
  const auto ref = tokenizer_keys(kTiny + "/stories260K.gguf"), got = tokenizer_keys(out + "/model.gguf");
  for (const char* k : {"tokenizer.ggml.model", "tokenizer.ggml.scores", "tokenizer.ggml.token_type",
                        "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id"})
    expect_same_entry(got, ref, k);
  ASSERT_TRUE(got.count("tokenizer.ggml.tokens") && ref.count("tokenizer.ggml.tokens"));
  const auto tokens = strings_of(got.at("tokenizer.ggml.tokens")), ref_tokens = strings_of(ref.at("tokenizer.ggml.tokens"));
  ASSERT_EQ(tokens.size(), ref_tokens.size());
  const TokenizerBin bin = tokenizer_bin(kTiny + "/tokenizer.bin", 512);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    EXPECT_EQ(tokens[i], spaces_to_u2581(bin.pieces[i])) << i;
    if (i != 1 && i != 2) {
      EXPECT_EQ(tokens[i], ref_tokens[i]) << i;
    }
  }
  exports_read_text_as(f, out, tokenize(src, f.text), {"model.gguf", "model.bin", "model.safetensors", "."});
  fs::remove_all(f.dir);
}

// An HF folder without a tokenizer: a lowp byte-vocabulary model (258 logits) after one step.
void hf_folder(const Fixture& f, const std::string& hf) {
  const Result base = lowp_run({"train", "--config", "tiny", "--corpus", f.corpus, "--steps", "1", "--batch", "1", "--ctx",
                                "16", "--out", f.dir + "/base", "--threads", "1"});
  ASSERT_EQ(base.code, 0) << base.err;
  fs::create_directories(hf);
  fs::copy_file(f.dir + "/base/model.safetensors", hf + "/model.safetensors");
  fs::copy_file(f.dir + "/base/config.json", hf + "/config.json");
}

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += static_cast<char>(c);
    else o += static_cast<char>(c);
  }
  return o + "\"";
}

// (c) HF folder (a lowp byte-vocabulary model, 258 logits) with a byte-level BPE tokenizer.json
// of 256 byte tokens, one merge ("Ġ" "t" -> id 256) and a special <|endoftext|> (id 257) that
// tokenizer_config.json makes BOS. Oracle ids by hand: "the tent" is BOS, t h e, Ġt e n t.
// Mutants: merges not written to the GGUF; the pre-tokenizer name wrong; tokenizer_config.json
// not copied.
TEST(CliTrainExports, HfFolderSourceKeepsTokenizerJson) {
  if (!fs::exists(shared + "/data/tinyshakespeare.txt")) GTEST_SKIP() << "needs ../shared";
  const Fixture f = fixture("exports_hf");
  const std::string hf = f.dir + "/hf";
  ASSERT_NO_FATAL_FAILURE(hf_folder(f, hf));
  std::string vocab;
  for (int b = 0; b < 256; ++b) vocab += json_string(lowp::test::byte_char(b)) + ": " + std::to_string(b) + ", ";
  const std::string gt = lowp::test::byte_char(' ') + "t";
  vocab += json_string(gt) + ": 256";
  lowp::test::write_text(hf + "/tokenizer.json",
                         "{\"version\": \"1.0\", \"added_tokens\": [{\"id\": 257, \"content\": \"<|endoftext|>\", "
                         "\"special\": true}], \"normalizer\": null, \"pre_tokenizer\": {\"type\": \"ByteLevel\", "
                         "\"add_prefix_space\": false, \"use_regex\": true}, \"decoder\": {\"type\": \"ByteLevel\"}, "
                         "\"model\": {\"type\": \"BPE\", \"vocab\": {" + vocab + "}, \"merges\": [" +
                             json_string(lowp::test::byte_char(' ') + " t") + "]}}");
  lowp::test::write_text(hf + "/tokenizer_config.json", "{\"bos_token\": \"<|endoftext|>\", \"add_bos_token\": true}");
  const std::string small = f.dir + "/small.txt";
  lowp::test::write_text(small, "the tent");
  EXPECT_EQ(tokenize(hf, small), "257\n116\n104\n101\n256\n101\n110\n116\n");

  const std::string out = f.dir + "/run";
  ASSERT_NO_FATAL_FAILURE(train_init(f, hf, out));
  for (const char* file : {"tokenizer.json", "tokenizer_config.json"})
    EXPECT_EQ(read_file(out + "/" + file), read_file(hf + "/" + file)) << file;
  const auto got = tokenizer_keys(out + "/model.gguf");
  ASSERT_TRUE(got.count("tokenizer.ggml.merges") && got.count("tokenizer.ggml.tokens"));
  EXPECT_EQ(strings_of(got.at("tokenizer.ggml.merges")), std::vector<std::string>{lowp::test::byte_char(' ') + " t"});
  const auto tokens = strings_of(got.at("tokenizer.ggml.tokens"));
  ASSERT_EQ(tokens.size(), 258u);
  EXPECT_EQ(tokens[256], gt);
  EXPECT_EQ(tokens[257], "<|endoftext|>");
  EXPECT_EQ(numbers_of<std::int32_t>(got.at("tokenizer.ggml.token_type"))[257], 3);  // control
  EXPECT_EQ(got.at("tokenizer.ggml.model").raw.substr(8), "gpt2");
  EXPECT_EQ(got.at("tokenizer.ggml.pre").raw.substr(8), "gpt-2");
  EXPECT_EQ(got.at("tokenizer.ggml.bos_token_id").raw, std::string("\x01\x01\0\0", 4));
  EXPECT_EQ(got.at("tokenizer.ggml.add_bos_token").raw, std::string("\x01", 1));
  for (const char* e : {"model.gguf", "model.bin", "model.safetensors", "."})
    EXPECT_EQ(tokenize(out + "/" + e, small), "257\n116\n104\n101\n256\n101\n110\n116\n") << e;
  exports_read_text_as(f, out, tokenize(hf, f.text), {"model.gguf", "model.bin", "model.safetensors", "."});
  // A GGUF with a byte-level BPE vocabulary (this run's model.gguf) as the source: its entries
  // byte for byte, and tokenizer.json + tokenizer_config.json written for the other exports.
  // Mutant: no tokenizer files written for a BPE GGUF (only tokenizer.bin tried).
  const std::string out2 = f.dir + "/run2";
  ASSERT_NO_FATAL_FAILURE(train_init(f, out + "/model.gguf", out2));
  const auto again = tokenizer_keys(out2 + "/model.gguf");
  for (const auto& kv : got) expect_same_entry(again, got, kv.first);
  EXPECT_TRUE(fs::exists(out2 + "/tokenizer.json"));
  for (const char* e : {"model.bin", "model.safetensors", "."})
    EXPECT_EQ(tokenize(out2 + "/" + e, small), "257\n116\n104\n101\n256\n101\n110\n116\n") << e;
  exports_read_text_as(f, out2, tokenize(hf, f.text), {"model.gguf", "model.bin", "model.safetensors", "."});
  // Without tokenizer_config.json the tokenizer adds no BOS: generate prints the prompt's first
  // token too (mutant: printing from the second token, as after BOS).
  fs::remove(out + "/tokenizer_config.json");
  const Result g = lowp_run({"generate", "--model", out, "--prompt", "Once upon", "--max-tokens", "2", "--threads", "1"});
  ASSERT_EQ(g.code, 0) << g.err;
  EXPECT_EQ(g.out.rfind("Once upon", 0), 0u) << g.out;
  fs::remove_all(f.dir);
}

// (c') HF folder with a SentencePiece tokenizer.model (a BPE model trained here by the library on
// the corpus and the text, so every character is a piece; 258 logits, fewer pieces): the file
// copied as it is, and model.gguf's "llama" vocabulary (the library's pieces and scores, padded
// with unused tokens) gives the library's own ids through lowp's score-ordered merger.
// Mutants: tokenizer.model not copied; scores dropped from the GGUF (as above).
TEST(CliTrainExports, HfFolderSourceKeepsTokenizerModel) {
  if (!fs::exists(shared + "/data/tinyshakespeare.txt")) GTEST_SKIP() << "needs ../shared";
  const Fixture f = fixture("exports_spm");
  const std::string hf = f.dir + "/hf";
  ASSERT_NO_FATAL_FAILURE(hf_folder(f, hf));
  std::vector<std::string> lines = {kText, "Once upon"};
  std::istringstream corpus(read_file(f.corpus));
  for (std::string l; std::getline(corpus, l);)
    if (!l.empty()) lines.push_back(l);
  lowp::test::SpmLines it(lines);
  std::string proto;
  // Identity normalization and kept whitespace: the text reaches the BPE as the GGUF path sees it.
  const auto st = sentencepiece::SentencePieceTrainer::Train(
      "--model_type=bpe --vocab_size=200 --character_coverage=1.0 --normalization_rule_name=identity "
      "--remove_extra_whitespaces=false --hard_vocab_limit=false --minloglevel=2",
      &it, &proto);
  ASSERT_TRUE(st.ok()) << st.ToString();
  lowp::test::write_text(hf + "/tokenizer.model", proto);
  const std::string out = f.dir + "/run";
  ASSERT_NO_FATAL_FAILURE(train_init(f, hf, out));
  EXPECT_EQ(read_file(out + "/tokenizer.model"), proto);
  const auto got = tokenizer_keys(out + "/model.gguf");
  ASSERT_TRUE(got.count("tokenizer.ggml.model") && got.count("tokenizer.ggml.tokens"));
  EXPECT_EQ(got.at("tokenizer.ggml.model").raw.substr(8), "llama");
  // Key by key against the library's own reading of the model: pieces (U+2581 for spaces, as
  // SentencePiece stores them), scores, and the ids of <unk> <s> </s>.
  sentencepiece::SentencePieceProcessor sp;
  ASSERT_TRUE(sp.LoadFromSerializedProto(proto).ok());
  const auto tokens = strings_of(got.at("tokenizer.ggml.tokens"));
  const auto scores = numbers_of<float>(got.at("tokenizer.ggml.scores"));
  const auto types = numbers_of<std::int32_t>(got.at("tokenizer.ggml.token_type"));
  ASSERT_EQ(tokens.size(), 258u);
  ASSERT_EQ(scores.size(), 258u);
  ASSERT_LT(sp.GetPieceSize(), 258);
  for (int i = 0; i < 258; ++i) {
    if (i < sp.GetPieceSize()) {
      EXPECT_EQ(tokens[i], sp.IdToPiece(i)) << i;
      EXPECT_EQ(scores[i], sp.GetScore(i)) << i;
      EXPECT_EQ(types[i], sp.IsUnknown(i) ? 2 : sp.IsControl(i) ? 3 : 1) << i;
    } else {
      EXPECT_EQ(types[i], 5) << i;  // unused padding up to the model's logits
    }
  }
  EXPECT_EQ(got.at("tokenizer.ggml.bos_token_id").raw, std::string("\x01\0\0\0", 4));
  EXPECT_EQ(got.at("tokenizer.ggml.unknown_token_id").raw, std::string("\0\0\0\0", 4));
  exports_read_text_as(f, out, tokenize(hf, f.text), {"model.gguf", "model.bin", "model.safetensors", "."});
  fs::remove_all(f.dir);
}

// Byte-level models (from scratch, and the built-in `shakespeare`): model.gguf carries the byte
// vocabulary, model.bin and the HF folder are read as bytes by their vocabulary size; every
// export reads the text as its bytes. Mutant: the GGUF written without a vocabulary.
TEST(CliTrainExports, ByteLevelExportsReadTextAsBytes) {
  if (!fs::exists(shared + "/data/tinyshakespeare.txt")) GTEST_SKIP() << "needs ../shared";
  const Fixture f = fixture("exports_bytes");
  const Result r = lowp_run({"train", "--config", "tiny", "--corpus", f.corpus, "--steps", "1", "--batch", "1", "--ctx",
                             "16", "--out", f.dir + "/run", "--threads", "1"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::string bytes;
  for (unsigned char c : kText) bytes += std::to_string(c) + "\n";
  EXPECT_EQ(tokenize("shakespeare", f.text), bytes);
  EXPECT_EQ(tokenize(lowp::accuracy::resolve_model_path("shakespeare"), f.text), bytes);
  exports_read_text_as(f, f.dir + "/run", bytes, {"model.gguf", "model.bin", "model.safetensors", "."});
  fs::remove_all(f.dir);
}

// A model without a tokenizer: eval advises --tokens, generate (which has none) does not.
// Mutant: generate's message with eval's advice.
TEST(CliTrainExports, NoTokenizerAdviceFitsTheCommand) {
  const std::string src = kTiny + "/stories260K.bin";
  if (!fs::exists(src)) GTEST_SKIP() << "needs " << src << " (../shared is absent)";
  const Fixture f = fixture("exports_no_tok");
  fs::copy_file(src, f.dir + "/m.bin");
  Result r = lowp_run({"generate", "--model", f.dir + "/m.bin", "--prompt", "Once"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("no tokenizer"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("generate needs the model's tokenizer"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("--tokens"), std::string::npos) << r.err;
  r = lowp_run({"eval", "--model", f.dir + "/m.bin", "--text", f.text});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("give token ids with --tokens"), std::string::npos) << r.err;
  r = lowp_run({"tokenize", "--model", f.dir + "/m.bin", "--text", f.text});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err.find("--tokens"), std::string::npos) << r.err;
  fs::remove_all(f.dir);
}

// `lowp tokenize` on llama2.c's tokenizer.bin: --vocab gives its size, or the model beside it
// does; the ids are those of the same vocabulary in llama.cpp's GGUF. Mutant: --vocab ignored.
TEST(CliTokenize, Llama2cTokenizerBin) {
  const std::string bin = kTiny + "/tokenizer.bin";
  if (!fs::exists(bin)) GTEST_SKIP() << "needs " << bin << " (../shared is absent)";
  const Fixture f = fixture("tokenize_bin");
  const std::string want = tokenize(kTiny + "/stories260K.gguf", f.text);
  EXPECT_EQ(lowp_run({"tokenize", "--model", bin, "--vocab", "512", "--text", f.text, "--bos", "auto"}).out, want);
  EXPECT_EQ(tokenize(kTiny + "/stories260K.bin", f.text), want);
  Result r = lowp_run({"tokenize", "--model", bin, "--text", f.text});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("give --vocab N"), std::string::npos) << r.err;
  r = lowp_run({"tokenize", "--model", bin, "--vocab", "500", "--text", f.text});
  EXPECT_EQ(r.code, 1);  // a size other than the file's: bytes left over
  EXPECT_NE(r.err.find("holds more than"), std::string::npos) << r.err;
  r = lowp_run({"tokenize", "--model", kTiny + "/stories260K.gguf", "--vocab", "512", "--text", f.text});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--vocab applies to llama2.c's tokenizer.bin only"), std::string::npos) << r.err;
  fs::remove_all(f.dir);
}

}  // namespace
