// Mutation fuzzing of every file reader: >= 10^5 mutated headers per loader (bit flips, byte
// sets, interesting integers, truncations, insertions, within the first 1 KB). Each input must
// load or throw lowp::Error with a one-line message: any other exception fails, a crash or an
// out-of-bounds read is caught by running this binary under AddressSanitizer (build-*-asan).
// LOWP_FUZZ_ITERS overrides the per-loader count (default 100000, which the `exhaustive` CTest tier
// runs; the default tier and scripts/sanitize-check run 20000: tests/accuracy/CMakeLists.txt).
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>

#include "loader_test_util.hpp"
#include "lowp/accuracy/loaders.hpp"
#include "lowp/accuracy/tokenizer.hpp"
#include "model_files.hpp"
#include "support/test_support.hpp"

namespace {

using namespace lowp::accuracy;
using namespace lowp::test;
using Buf = std::vector<std::uint8_t>;

std::size_t iterations() {
  const char* e = std::getenv("LOWP_FUZZ_ITERS");
  return e ? std::strtoull(e, nullptr, 10) : 100000;
}

// Applies 1 to 4 random mutations within the first `span` bytes.
void mutate(Buf& b, SplitMix& rng, std::size_t span = 1024) {
  static const std::uint64_t interesting[] = {0, 1, 2, 3, 4, 7, 8, 16, 31, 32, 33, 64, 127, 128, 255, 256,
                                              0x7fff, 0x8000, 0xffff, 0x7fffffff, 0x80000000ull, 0xffffffffull,
                                              0x100000000ull, 0x7fffffffffffffffull, 0x8000000000000000ull,
                                              0xffffffffffffffffull, 0xfffffffffffffff0ull};
  const int n = 1 + static_cast<int>(rng.next() % 4);
  for (int k = 0; k < n; ++k) {
    const std::size_t lim = std::min(b.size(), span);
    const std::uint64_t r = rng.next();
    const std::size_t pos = lim ? static_cast<std::size_t>(rng.next() % lim) : 0;
    switch (r % 8) {
      case 0:  // bit flip
        if (lim) b[pos] ^= static_cast<std::uint8_t>(1u << (rng.next() % 8));
        break;
      case 1:  // byte set
        if (lim) b[pos] = static_cast<std::uint8_t>(rng.next());
        break;
      case 2:
      case 3: {  // an interesting 1/2/4/8-byte integer, possibly negated
        const std::size_t w = std::size_t{1} << (rng.next() % 4);
        std::uint64_t v = interesting[rng.next() % std::size(interesting)];
        if (rng.next() % 4 == 0) v = ~v + 1;
        if (pos + w <= b.size()) std::memcpy(b.data() + pos, &v, w);
        break;
      }
      case 4:  // small add to a byte (counts, lengths off by a little)
        if (lim) b[pos] = static_cast<std::uint8_t>(b[pos] + (rng.next() % 2 ? 1 : 255));
        break;
      case 5:  // truncation
        b.resize(static_cast<std::size_t>(rng.next() % (b.size() + 1)));
        break;
      case 6: {  // insertion
        const std::size_t m = 1 + rng.next() % 16;
        Buf ins(m);
        for (auto& x : ins) x = static_cast<std::uint8_t>(rng.next());
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(std::min(pos, b.size())), ins.begin(), ins.end());
        break;
      }
      case 7: {  // deletion
        const std::size_t m = std::min<std::size_t>(1 + rng.next() % 16, b.size() - std::min(pos, b.size()));
        b.erase(b.begin() + static_cast<std::ptrdiff_t>(pos), b.begin() + static_cast<std::ptrdiff_t>(pos + m));
        break;
      }
    }
  }
}

// Feeds mutated copies of `base` to `load`; returns how many loaded without error.
std::size_t fuzz(const Buf& base, std::uint64_t seed, const std::function<void(const Buf&)>& load,
                 std::size_t span = 1024) {
  SplitMix rng{seed};
  std::size_t ok = 0, failures = 0;
  const std::size_t n = iterations();
  for (std::size_t i = 0; i < n; ++i) {
    Buf b = base;
    mutate(b, rng, span);
    try {
      load(b);
      ++ok;
    } catch (const lowp::Error& e) {
      const std::string msg = e.what();
      const bool one_line = std::none_of(msg.begin(), msg.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; });
      if (!one_line && failures++ < 5) ADD_FAILURE() << "control character in the error at iteration " << i << ": " << msg;
    } catch (const std::exception& e) {
      if (failures++ < 5) ADD_FAILURE() << "iteration " << i << ": not a lowp::Error: " << e.what();
    }
  }
  return ok;
}

LlamaConfig tiny_config() {
  LlamaConfig c;
  c.dim = 8;
  c.hidden_dim = 12;
  c.n_layers = 1;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.vocab_size = 12;
  c.seq_len = 4;
  return c;
}

TEST(FuzzLoaders, Llama2c) {
  const Buf base = llama2c_bytes(random_model(tiny_config(), 60, false));
  ASSERT_NO_THROW(load_llama2c_bytes(base, "m.bin"));
  const std::size_t ok = fuzz(base, 1, [](const Buf& b) { load_llama2c_bytes(b, "m.bin"); });
  EXPECT_LT(ok, iterations());  // the mutations do reach the checks
}

TEST(FuzzLoaders, Gguf) {
  const LlamaModel m = random_model(tiny_config(), 61);
  const Buf base = gguf_bytes(m);
  ASSERT_NO_THROW(load_gguf_bytes(base, "m.gguf"));
  const std::size_t ok = fuzz(base, 2, [](const Buf& b) { load_gguf_bytes(b, "m.gguf"); });
  EXPECT_GT(ok, 0u);  // some mutations land in data or slack and still load
  EXPECT_LT(ok, iterations());
}

TEST(FuzzLoaders, GgufQ8AndTokenizer) {
  LlamaConfig c = tiny_config();
  c.dim = 32;
  c.hidden_dim = 32;
  TestVocab v;
  v.pieces = {"<unk>", "<s>", "</s>", "<0x41>", " ", "a", "b", " a", "ab", " ab", "ba", "bb"};
  v.scores = {0, 0, 0, 0, -5, -5, -5, -1, -2, -3, -4, -4};
  v.types = {2, 3, 3, 6, 1, 1, 1, 1, 1, 1, 1, 1};
  GgufOptions o;
  o.type = GgufType::q8_0;
  o.vocab = &v;
  const Buf base = gguf_bytes(random_model(c, 62), o);
  ASSERT_NO_THROW(load_gguf_bytes(base, "m.gguf"));
  ASSERT_NO_THROW(load_gguf_tokenizer_bytes(base, "m.gguf"));
  fuzz(base, 3, [](const Buf& b) {
    try {
      load_gguf_tokenizer_bytes(b, "m.gguf").encode("ab ba Ab\xC3\xA9");
    } catch (const lowp::Error&) {
    }
    load_gguf_bytes(b, "m.gguf");
  });
}

TEST(FuzzLoaders, Safetensors) {
  const LlamaModel m = random_model(tiny_config(), 63);
  const Buf base = safetensors_bytes(m);
  const std::string cfg = hf_config_json(m);
  ASSERT_NO_THROW(load_safetensors_bytes(base, cfg, "m.safetensors"));
  fuzz(base, 4, [&](const Buf& b) { load_safetensors_bytes(b, cfg, "m.safetensors"); }, 2048);
  const Buf cfg_bytes(cfg.begin(), cfg.end());
  fuzz(cfg_bytes, 5, [&](const Buf& c) {
    load_safetensors_bytes(base, std::string_view(reinterpret_cast<const char*>(c.data()), c.size()), "m.safetensors");
  });
}

TEST(FuzzLoaders, Llama2cTokenizerAndTokenFile) {
  TestVocab v;
  v.pieces = {"<unk>", "<s>", "</s>", "<0x41>", " ", "a", "b", " a", "ab", " ab"};
  v.scores = {0, 0, 0, 0, -5, -5, -5, -1, -2, -3};
  const Buf base = llama2c_tokenizer_bytes(v);
  fuzz(base, 6, [](const Buf& b) { load_llama2c_tokenizer_bytes(b, 10, "tok.bin").encode("ab a\x80"); });
  const std::string ids = "1\n306\n461\n\n465\n";
  fuzz(Buf(ids.begin(), ids.end()), 7, [](const Buf& b) {
    parse_token_ids(std::string_view(reinterpret_cast<const char*>(b.data()), b.size()), 512, "t.txt");
  });
}

}  // namespace
