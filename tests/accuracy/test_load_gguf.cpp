// GGUF v3: writer round trips in F32/F16/BF16/Q8_0, a hand-computed Q8_0 block, bad files.
#include <gtest/gtest.h>

#include <filesystem>

#include "loader_test_util.hpp"
#include "lowp/accuracy/loaders.hpp"
#include "model_files.hpp"
#include "support/test_support.hpp"

namespace {

using namespace lowp::accuracy;
using namespace lowp::test;

LlamaModel load(const std::vector<std::uint8_t>& b) { return load_gguf_bytes(b, "m.gguf"); }

TEST(LoadGguf, RoundTripF32) {
  const std::string dir = temp_dir("gguf_rt");
  for (bool tied : {true, false})
    for (std::uint32_t align : {32u, 64u, 8u}) {
      const LlamaModel m = random_model(small_config(), 10 + tied, tied);
      GgufOptions o;
      o.alignment = align;
      write_file(dir + "/m.gguf", gguf_bytes(m, o));
      const LlamaModel r = load_gguf(dir + "/m.gguf");
      expect_identical(m, r);
      EXPECT_EQ(r.classifier.empty(), tied);
      EXPECT_EQ(r.source, "gguf");
      expect_identical(m, load_model(dir + "/m.gguf"));
    }
  std::filesystem::remove_all(dir);
}

TEST(LoadGguf, RoundTripF16Bf16Q8) {
  const LlamaModel m = random_model(small_config(32, 64, 48), 20, false);
  GgufOptions o;
  o.type = GgufType::f16;
  // binary16 keeps 11 significant bits (relative error <= 2^-11); values below 2^-14 are
  // subnormal there, absolute error <= 2^-25.
  expect_close(m, load(gguf_bytes(m, o)), 0x1p-11, 0x1p-25);
  o.type = GgufType::bf16;
  expect_close(m, load(gguf_bytes(m, o)), 0x1p-8, 0);
  o.type = GgufType::q8_0;
  const LlamaModel q = load(gguf_bytes(m, o));
  // Per block of 32: x = d q with |x - d q| <= d / 2, and d's float16 rounding adds at most
  // 127 |d| 2^-11. Norms stay float32 and round-trip exactly.
  for_each_tensor(m, q, [](const std::string& n, const std::vector<float>& x, const std::vector<float>& y) {
    ASSERT_EQ(x.size(), y.size()) << n;
    const bool norm = n.find("norm") != std::string::npos;
    for (std::size_t b = 0; b < x.size(); b += 32) {
      float amax = 0;
      for (int i = 0; i < 32 && b + i < x.size(); ++i) amax = std::max(amax, std::fabs(x[b + i]));
      const double d = amax / 127.0;
      for (int i = 0; i < 32 && b + i < x.size(); ++i) {
        if (norm) ASSERT_EQ(x[b + i], y[b + i]) << n;
        else ASSERT_LE(std::fabs(double(x[b + i]) - y[b + i]), d * (0.5 + 127 * 0x1p-11) + 1e-12) << n << " [" << b + i << "]";
      }
    }
  });
}

TEST(LoadGguf, Q8BlockByHand) {
  const LlamaModel m = random_model(small_config(32, 64, 48), 21);
  GgufOptions o;
  o.type = GgufType::q8_0;
  auto bytes = gguf_bytes(m, o);
  // Find the writer's first token_embd block and overwrite it with a hand-made one:
  // d = 0x3555 = 2^-2 * (1 + 341/1024) = 0.333251953125, q_i = 8i - 128.
  ByteSink first;
  put_q8_0(first, std::vector<float>(m.token_embedding.begin(), m.token_embedding.begin() + 32));
  const std::size_t pos = find_bytes(bytes, std::string(first.b.begin(), first.b.end()));
  bytes = patched<std::uint16_t>(bytes, pos, 0x3555);
  for (int i = 0; i < 32; ++i) bytes[pos + 2 + i] = static_cast<std::uint8_t>(static_cast<std::int8_t>(8 * i - 128));
  const LlamaModel r = load(bytes);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(r.token_embedding[i], static_cast<float>(0.333251953125 * (8 * i - 128))) << i;
  EXPECT_EQ(r.token_embedding[0], -42.65625f);  // 0.333251953125 * -128
  EXPECT_EQ(r.token_embedding[16], 0.0f);
}

// Offset of the n_dims field of tensor `name`'s info (just after its name string).
std::size_t info_pos(const std::vector<std::uint8_t>& b, const std::string& name) {
  std::string key(8, '\0');
  const std::uint64_t n = name.size();
  std::memcpy(key.data(), &n, 8);
  return find_bytes(b, key + name) + 8 + name.size();
}

TEST(LoadGguf, BadFiles) {
  const LlamaModel m = random_model(small_config(), 30);
  const auto good = gguf_bytes(m);
  ASSERT_NO_THROW(load(good));
  // Truncation in each fixed header field, then anywhere up to the end.
  const char* fields[] = {"magic", "magic", "magic", "magic", "version", "version", "version", "version"};
  for (std::size_t n = 0; n < 8; ++n)
    expect_error([&] { load({good.begin(), good.begin() + n}); }, {"m.gguf", fields[n], "runs past the end"});
  for (std::size_t n = 8; n < 24; ++n)
    expect_error([&] { load({good.begin(), good.begin() + n}); },
                 {"m.gguf", n < 16 ? "tensor count" : "metadata count", "runs past the end"});
  expect_error([&] { load({good.begin(), good.begin() + 30}); }, {"m.gguf", "metadata count 10 is more than the file can hold"});
  for (std::size_t n = 24; n < good.size(); ++n)  // every other truncation point
    EXPECT_THROW(load({good.begin(), good.begin() + n}), lowp::Error) << n;

  expect_error([&] { load(patched<char>(good, 0, 'X')); }, {"m.gguf", "not a GGUF file"});
  expect_error([&] { load(patched<std::uint32_t>(good, 4, 1)); }, {"m.gguf", "GGUF version 1 is not supported"});
  expect_error([&] { load(patched<std::uint64_t>(good, 8, std::uint64_t{1} << 60)); },
               {"m.gguf", "tensor count 1152921504606846976 is more than the file can hold"});
  expect_error([&] { load(patched<std::uint64_t>(good, 16, ~std::uint64_t{0})); },
               {"m.gguf", "metadata count 18446744073709551615"});
  expect_error([&] { load(patched<std::uint64_t>(good, 24, std::uint64_t{1} << 40)); },
               {"m.gguf", "metadata entry 0 key", "runs past the end"});

  // Unknown / unsupported tensor types are named.
  const std::size_t q = info_pos(good, "blk.0.attn_q.weight");
  expect_error([&] { load(patched<std::uint32_t>(good, q + 4 + 16, 4)); },
               {"m.gguf", "'blk.0.attn_q.weight'", "Q4_2 (4)", "does not load"});
  expect_error([&] { load(patched<std::uint32_t>(good, q + 4 + 16, 12)); },
               {"m.gguf", "'blk.0.attn_q.weight' is Q4_K (12) but its row length 16 is not a multiple of the block size 256"});
  expect_error([&] { load(patched<std::uint32_t>(good, q + 4 + 16, 777)); }, {"m.gguf", "unknown (777)"});
  // Offsets: past the end of the file, unaligned.
  expect_error([&] { load(patched<std::uint64_t>(good, q + 4 + 16 + 4, 1u << 20)); },
               {"m.gguf", "tensor 'blk.0.attn_q.weight' data [offset", "runs past the end of the file (" +
                                                                         std::to_string(good.size()) + " bytes)"});
  expect_error([&] { load(patched<std::uint64_t>(good, q + 4 + 16 + 4, 4)); }, {"m.gguf", "not a multiple of the alignment 32"});
  // Shapes: wrong, zero, too many dimensions, overflowing.
  const std::size_t norm = info_pos(good, "blk.1.attn_norm.weight");
  expect_error([&] { load(patched<std::uint64_t>(good, norm + 4, 8)); },
               {"m.gguf", "'blk.1.attn_norm.weight' has shape [8], expected [16]"});
  expect_error([&] { load(patched<std::uint64_t>(good, norm + 4, 0)); }, {"m.gguf", "dimension 0 is 0"});
  expect_error([&] { load(patched<std::uint32_t>(good, q, 5)); }, {"m.gguf", "has 5 dimensions"});
  auto big = patched<std::uint64_t>(good, q + 4, std::uint64_t{1} << 40);
  expect_error([&] { load(patched<std::uint64_t>(big, q + 12, std::uint64_t{1} << 40)); }, {"m.gguf", "overflows 64 bits"});
  // Missing and duplicated tensors, missing / wrong metadata.
  expect_error([&] { load(replaced(good, "blk.1.ffn_up.weight", "blk.1.ffn_xx.weight")); },
               {"m.gguf", "tensor 'blk.1.ffn_up.weight' is missing"});
  expect_error([&] { load(replaced(good, "blk.1.ffn_up.weight", "blk.0.ffn_up.weight")); },
               {"m.gguf", "'blk.0.ffn_up.weight' appears twice"});
  expect_error([&] { load(replaced(good, "llama.embedding_length", "llama.embedding_lengtX")); },
               {"m.gguf", "metadata 'llama.embedding_length' is missing"});
  auto with_len = [](const std::string& k) {
    std::string s(8, '\0');
    const std::uint64_t n = k.size();
    std::memcpy(s.data(), &n, 8);
    return s + k;
  };
  expect_error([&] { load(replaced(good, with_len("llama.block_count"), with_len("llama.context_length"))); },
               {"m.gguf", "metadata key 'llama.context_length' appears twice"});
  const std::size_t arch = find_bytes(good, "general.architecture") + 20;  // then type, length, "llama"
  expect_error([&] { load(patched<char>(good, arch + 12 + 4, 'x')); }, {"m.gguf", "architecture 'llamx' is not supported"});
  expect_error([&] { load(patched<std::uint32_t>(good, arch, 99)); }, {"m.gguf", "unknown value type 99"});
  const std::size_t ctx = find_bytes(good, "llama.context_length") + 20 + 4;
  expect_error([&] { load(patched<std::uint32_t>(good, ctx, 0)); }, {"m.gguf", "llama.context_length is 0"});
  // A corrupt block count within the memory budget fails before the layers are allocated (the
  // fuzzing spent 97% of its time allocating and freeing the layers of mutated counts before the
  // first missing tensor was reported). Mutant checked: no bound before m.layers.resize.
  const std::size_t blocks = find_bytes(good, "llama.block_count") + 17 + 4;
  expect_error([&] { load(patched<std::uint32_t>(good, blocks, 1000)); },
               {"m.gguf", "metadata 'llama.block_count' is 1000, more than the file's"});
  expect_error([&] { load(patched<std::uint32_t>(good, blocks, 3)); }, {"m.gguf", "tensor 'blk.2.attn_norm.weight' is missing"});
  const std::size_t heads = find_bytes(good, "llama.attention.head_count") + 26 + 4;
  expect_error([&] { load(patched<std::uint32_t>(good, heads, 3)); }, {"m.gguf", "not a multiple of n_heads 3"});
  GgufOptions o;
  o.alignment = 64;
  const auto a64 = gguf_bytes(m, o);
  const std::size_t al = find_bytes(a64, "general.alignment") + 17 + 4;
  expect_error([&] { load(patched<std::uint32_t>(a64, al, 48)); }, {"m.gguf", "general.alignment must be a power-of-two"});
}

}  // namespace
