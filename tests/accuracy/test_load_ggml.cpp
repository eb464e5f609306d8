// GGUF block types against llama.cpp: ggml's own dequantized values of every tensor (bit-exact),
// the float64 logits of model A in every type llama-quantize wrote, and hand-packed blocks of
// the types ../shared has no file of, decoded against values computed here from the spec.
#include <gtest/gtest.h>

#include <bit>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "io/ggml/ggml_types.hpp"
#include "llama_test_util.hpp"
#include "lowp/accuracy/eval.hpp"
#include "lowp/accuracy/loaders.hpp"
#include "lowp/numerics/half.hpp"
#include "support/test_support.hpp"

namespace {

using namespace lowp::accuracy;
using namespace lowp::test;

std::string gguf_dir() { return shared_path("gguf"); }

#define REQUIRE_GGUF_DATA()                                                                   \
  if (!std::filesystem::exists(gguf_dir() + "/modelA-F32.gguf"))                              \
  GTEST_SKIP() << "../shared/gguf (llama.cpp's model A files) is absent"

// The model's float32 copy of a GGUF tensor, by GGUF name.
const std::vector<float>& by_name(const LlamaModel& m, const std::string& name) {
  if (name == "token_embd.weight") return m.token_embedding;
  if (name == "output.weight") return m.classifier;
  if (name == "output_norm.weight") return m.final_norm;
  const std::size_t dot = name.find('.', 4);
  const int l = std::stoi(name.substr(4, dot - 4));
  const std::string t = name.substr(dot + 1);
  const LayerWeights& w = m.layers.at(l);
  static const std::map<std::string, Weight LayerWeights::*> fields = {
      {"attn_norm.weight", &LayerWeights::attn_norm}, {"attn_q.weight", &LayerWeights::wq},
      {"attn_k.weight", &LayerWeights::wk},           {"attn_v.weight", &LayerWeights::wv},
      {"attn_output.weight", &LayerWeights::wo},      {"ffn_norm.weight", &LayerWeights::ffn_norm},
      {"ffn_gate.weight", &LayerWeights::w_gate},     {"ffn_down.weight", &LayerWeights::w_down},
      {"ffn_up.weight", &LayerWeights::w_up}};
  return w.*fields.at(t);
}

// Every tensor of the Q2_K, Q3_K_M and IQ4_XS files (Q2_K to Q6_K, IQ4_XS and F32 tensors)
// against ggml's dequantized values, bit for bit.
TEST(GgmlDequant, BitExactAgainstGgml) {
  REQUIRE_GGUF_DATA();
  std::map<std::string, int> types_seen;
  for (const std::string t : {"Q2_K", "Q3_K_M", "IQ4_XS"}) {
    const LlamaModel m = load_gguf(gguf_dir() + "/modelA-" + t + ".gguf");
    const auto ref = read_binary<float>(gguf_dir() + "/dequant/modelA-" + t + ".dequant.f32le.bin");
    std::ifstream index(gguf_dir() + "/dequant/modelA-" + t + ".index.tsv");
    std::string line;
    std::getline(index, line);  // header
    int tensors = 0;
    while (std::getline(index, line)) {
      std::istringstream f(line);
      std::string name, type, ne, shape;
      std::uint64_t offset = 0, count = 0;
      std::getline(f, name, '\t');
      std::getline(f, type, '\t');
      std::getline(f, ne, '\t');
      std::getline(f, shape, '\t');
      f >> offset >> count;
      ASSERT_EQ(offset % 4, 0u);
      ASSERT_LE(offset / 4 + count, ref.size()) << name;
      const std::vector<float>& got = by_name(m, name);
      ASSERT_EQ(got.size(), count) << t << " " << name;
      std::size_t bad = 0, first = 0;
      for (std::size_t i = 0; i < count; ++i)
        if (std::bit_cast<std::uint32_t>(got[i]) != std::bit_cast<std::uint32_t>(ref[offset / 4 + i]) && !bad++) first = i;
      EXPECT_EQ(bad, 0u) << t << " " << name << " (" << type << "): first difference at " << first << ": "
                         << got[first] << " vs " << ref[offset / 4 + first];
      ++types_seen[type];
      ++tensors;
    }
    EXPECT_EQ(tensors, 21) << t;
  }
  for (const char* type : {"Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_XS", "F32"})
    EXPECT_GT(types_seen[type], 0) << type << " is not covered by the reference files";
}

// A float32 forward over every type llama-quantize wrote lands within 1e-4 of an independent
// float64 forward over ggml's dequantized weights (../shared/README.md).
TEST(GgmlDequant, EveryModelAFileMatchesFloat64Logits) {
  REQUIRE_GGUF_DATA();
  const auto tokens = read_ids(gguf_dir() + "/tokens.txt");
  ASSERT_EQ(tokens.size(), 128u);
  for (const std::string t : {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K_M",
                              "Q4_K_M", "Q5_K_M", "Q6_K", "IQ4_NL", "IQ4_XS"}) {
    const LlamaModel m = load_gguf(gguf_dir() + "/modelA-" + t + ".gguf");
    const auto ref = read_binary<double>(gguf_dir() + "/logits/logits_modelA_" + t + "_dequant_f64.f64le.bin");
    ASSERT_EQ(ref.size(), 128u * 512u) << t;
    EvalOptions opt;
    opt.keep_logits = true;
    opt.score_all = true;
    const EvalRun run = evaluate(m, tokens, find_recipe("fp32"), opt);
    ASSERT_EQ(run.logits.size(), ref.size()) << t;
    double worst = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::abs(run.logits[i] - ref[i]));
    EXPECT_LE(worst, 1e-4) << t;
  }
}

// --- hand-packed blocks -----------------------------------------------------------------

std::vector<float> decode(std::uint32_t type, const std::vector<std::uint8_t>& b, std::size_t n) {
  std::vector<float> out(n);
  ggml::dequantize(type, b.data(), out.data(), n);
  return out;
}

void put_half(std::vector<std::uint8_t>& b, std::size_t at, std::uint16_t h) {
  b[at] = static_cast<std::uint8_t>(h);
  b[at + 1] = static_cast<std::uint8_t>(h >> 8);
}

// MXFP4: a byte e scales 2^(e-127); nibbles are FP4 E2M1 (sign, 2 exponent bits, 1 mantissa
// bit, bias 1), low nibbles first. Every exponent byte and nibble.
TEST(GgmlDequant, Mxfp4AllScalesAndCodes) {
  const auto e2m1 = [](int c) {
    const int s = c >> 3, e = (c >> 1) & 3, m = c & 1;
    const double mag = e == 0 ? 0.5 * m : std::ldexp(1.0 + 0.5 * m, e - 1);
    return s ? -mag : mag;
  };
  ASSERT_EQ(ggml::block_size(ggml::mxfp4), 32u);
  ASSERT_EQ(ggml::block_bytes(ggml::mxfp4), 17u);
  for (int e = 0; e < 256; ++e) {
    std::vector<std::uint8_t> b(17);
    b[0] = static_cast<std::uint8_t>(e);
    for (int j = 0; j < 16; ++j) b[1 + j] = static_cast<std::uint8_t>(j | (15 - j) << 4);
    const auto y = decode(ggml::mxfp4, b, 32);
    for (int j = 0; j < 16; ++j) {
      ASSERT_EQ(y[j], static_cast<float>(e2m1(j) * std::ldexp(1.0, e - 127))) << e << " " << j;
      ASSERT_EQ(y[16 + j], static_cast<float>(e2m1(15 - j) * std::ldexp(1.0, e - 127))) << e << " " << j;
    }
  }
}

// TQ1_0 packs five trits t in {-1, 0, 1} a byte as the base-3 fraction ceil(256 v / 243) with
// v = sum (t_n + 1) 3^(4-n): elements n*32 + m from bytes 0..31, 160 + n*16 + m from bytes
// 32..47, then four trits a byte (a fifth digit 0) for 240 + n*4 + j. Every byte value a
// packer can write is used.
TEST(GgmlDequant, Tq1AllTritPatterns) {
  ASSERT_EQ(ggml::block_bytes(ggml::tq1_0), 54u);
  const auto pack = [](const int* t, int digits) {
    int v = 0;
    for (int n = 0; n < 5; ++n) v = 3 * v + (n < digits ? t[n] + 1 : 0);
    return static_cast<std::uint8_t>((v * 256 + 242) / 243);
  };
  for (int base = 0; base < 243; base += 48) {  // 6 blocks x 48 five-trit bytes cover all 243
    std::vector<std::uint8_t> b(54);
    std::vector<double> want(256);
    for (int byte = 0; byte < 48; ++byte) {
      int t[5], code = (base + byte) % 243;
      for (int n = 4; n >= 0; --n, code /= 3) t[n] = code % 3 - 1;
      b[byte] = pack(t, 5);
      for (int n = 0; n < 5; ++n) want[byte < 32 ? n * 32 + byte : 160 + n * 16 + (byte - 32)] = t[n];
    }
    for (int j = 0; j < 4; ++j) {
      int t[4], code = (base + 7 * j) % 81;
      for (int n = 3; n >= 0; --n, code /= 3) t[n] = code % 3 - 1;
      b[48 + j] = pack(t, 4);
      for (int n = 0; n < 4; ++n) want[240 + n * 4 + j] = t[n];
    }
    put_half(b, 52, 0x3C00 + 0x0155);  // d = 1 + 341/1024
    const double d = 1.0 + 341.0 / 1024;
    const auto y = decode(ggml::tq1_0, b, 256);
    for (int i = 0; i < 256; ++i) ASSERT_EQ(y[i], static_cast<float>(want[i] * d)) << base << " " << i;
  }
}

// TQ2_0: 2-bit codes {0,1,2} for {-1,0,1}; byte j + 32 g (g = 0, 1) holds elements
// 128 g + 32 l + j in bits 2l.
TEST(GgmlDequant, Tq2Codes) {
  std::vector<std::uint8_t> b(66);
  std::vector<int> want(256);
  for (int i = 0; i < 256; ++i) {
    const int code = (i * 7 + i / 5) % 3, g = i / 128, l = (i % 128) / 32, j = i % 32;
    b[j + 32 * g] = static_cast<std::uint8_t>(b[j + 32 * g] | code << (2 * l));
    want[i] = code - 1;
  }
  put_half(b, 64, 0xC500);  // -5
  const auto y = decode(ggml::tq2_0, b, 256);
  for (int i = 0; i < 256; ++i) ASSERT_EQ(y[i], static_cast<float>(-5 * want[i])) << i;
}

// Q5_0 / Q5_1 / Q4_1 / Q8_1 blocks by hand: element j's fifth bit is bit j of qh.
TEST(GgmlDequant, LegacyBlocksByHand) {
  std::vector<std::uint8_t> b(24);
  put_half(b, 0, 0x3800);  // d = 0.5
  put_half(b, 2, 0xBC00);  // m = -1 (Q5_1)
  const std::uint32_t qh = 0xA5C3F00Fu;
  std::memcpy(&b[4], &qh, 4);
  for (int j = 0; j < 16; ++j) b[8 + j] = static_cast<std::uint8_t>(j | (15 - j) << 4);
  const auto y1 = decode(ggml::q5_1, b, 32);
  for (int i = 0; i < 32; ++i) {
    const int q = (i < 16 ? i : 31 - i) + 16 * static_cast<int>((qh >> i) & 1);
    ASSERT_EQ(y1[i], 0.5f * static_cast<float>(q) - 1.0f) << i;
  }
  // Q5_0 is the same without m, centred on 16.
  std::vector<std::uint8_t> b0(22);
  put_half(b0, 0, 0x3800);
  std::copy(b.begin() + 4, b.end(), b0.begin() + 2);
  const auto y0 = decode(ggml::q5_0, b0, 32);
  for (int i = 0; i < 32; ++i) {
    const int q = (i < 16 ? i : 31 - i) + 16 * static_cast<int>((qh >> i) & 1);
    ASSERT_EQ(y0[i], 0.5f * static_cast<float>(q - 16)) << i;
  }
  std::vector<std::uint8_t> b41(20);
  put_half(b41, 0, 0x4000);  // d = 2
  put_half(b41, 2, 0x3C00);  // m = 1
  for (int j = 0; j < 16; ++j) b41[4 + j] = static_cast<std::uint8_t>(j | (15 - j) << 4);
  const auto y41 = decode(ggml::q4_1, b41, 32);
  for (int i = 0; i < 32; ++i) ASSERT_EQ(y41[i], 2.0f * static_cast<float>(i < 16 ? i : 31 - i) + 1.0f) << i;
  std::vector<std::uint8_t> b81(36);
  put_half(b81, 0, 0x3400);  // d = 0.25; the sum at bytes 2..3 is ignored
  put_half(b81, 2, 0x7BFF);
  for (int j = 0; j < 32; ++j) b81[4 + j] = static_cast<std::uint8_t>(static_cast<std::int8_t>(4 * j - 64));
  const auto y81 = decode(ggml::q8_1, b81, 32);
  for (int i = 0; i < 32; ++i) ASSERT_EQ(y81[i], 0.25f * static_cast<float>(4 * i - 64)) << i;
}

TEST(GgmlDequant, TypesNamedAndRefused) {
  EXPECT_EQ(ggml::type_name(12), "Q4_K (12)");
  EXPECT_EQ(ggml::type_name(39), "MXFP4 (39)");
  EXPECT_EQ(ggml::type_name(4), "Q4_2 (4)");
  EXPECT_EQ(ggml::type_name(777), "unknown (777)");
  EXPECT_EQ(ggml::block_size(ggml::q4_k), 256u);
  EXPECT_EQ(ggml::block_bytes(ggml::q6_k), 210u);
  EXPECT_EQ(ggml::bytes_for(ggml::q3_k, 512), 220u);
  EXPECT_TRUE(ggml::can_dequantize(ggml::iq2_xxs));
  EXPECT_TRUE(ggml::known(ggml::i32));
  EXPECT_FALSE(ggml::can_dequantize(ggml::i32));
  std::vector<float> out(256);
  std::vector<std::uint8_t> blocks(300);
  expect_error([&] { ggml::dequantize(ggml::i32, blocks.data(), out.data(), 256); }, {"I32 (26)"});
  expect_error([&] { ggml::dequantize(777, blocks.data(), out.data(), 256); }, {"unknown (777)"});
  expect_error([&] { ggml::dequantize(ggml::q4_k, blocks.data(), out.data(), 100); }, {"Q4_K (12)", "whole blocks of 256"});
  expect_error([&] { ggml::block_size(5); }, {"Q4_3 (5)"});
  expect_error([&] { ggml::bytes_for(ggml::q8_0, 33); }, {"Q8_0 (8)", "whole blocks of 32"});
}

// The grid-coded types (../shared has no file of them): random blocks decoded, every value
// checked to be (scale from the block's documented bit fields) x (a value of the type's grid
// alphabet) with the documented sign rules. The grid indices themselves are not checked
// against llama.cpp here.
TEST(GgmlDequant, GridTypesScalesSignsAndAlphabets) {
  std::mt19937 gen(11);
  const auto u16 = [](const std::vector<std::uint8_t>& b, std::size_t at) { return static_cast<unsigned>(b[at] | b[at + 1] << 8); };
  const auto u32 = [](const std::vector<std::uint8_t>& b, std::size_t at) {
    return static_cast<std::uint32_t>(b[at] | b[at + 1] << 8 | b[at + 2] << 16) | static_cast<std::uint32_t>(b[at + 3]) << 24;
  };
  const auto in = [](double v, std::initializer_list<int> set) {
    for (int s : set)
      if (std::abs(std::abs(v) - s) < 1e-9) return true;
    return false;
  };
  for (int rep = 0; rep < 20; ++rep) {
    auto block = [&](std::size_t n) {
      std::vector<std::uint8_t> b(n);
      for (auto& x : b) x = static_cast<std::uint8_t>(gen());
      return b;
    };
    {  // IQ2_XXS: per 32, uint32 #2 = scale (top 4 bits) and four 7-bit sign groups, even parity.
      auto b = block(66);
      put_half(b, 0, 0x3C00);
      const auto y = decode(ggml::iq2_xxs, b, 256);
      for (int ib = 0; ib < 8; ++ib) {
        const std::uint32_t aux = u32(b, 2 + 8 * ib + 4);
        const double db = (0.5 + (aux >> 28)) * 0.25;
        for (int g = 0; g < 4; ++g) {
          int negative = 0;
          for (int j = 0; j < 8; ++j) {
            const double v = y[32 * ib + 8 * g + j] / db;
            ASSERT_TRUE(in(v, {8, 25, 43})) << v;
            negative += v < 0;
            if (j < 7) {
              ASSERT_EQ(v < 0, ((aux >> (7 * g + j)) & 1) != 0);
            }
          }
          ASSERT_EQ(negative % 2, 0);
        }
      }
    }
    {  // IQ2_XS: 4-bit scales in bytes 66.., the low nibble for the first 16 of each 32.
      auto b = block(74);
      put_half(b, 0, 0x3C00);
      const auto y = decode(ggml::iq2_xs, b, 256);
      for (int i = 0; i < 256; ++i) {
        const int sc = i % 32 < 16 ? b[66 + i / 32] & 15 : b[66 + i / 32] >> 4;
        const unsigned q = u16(b, 2 + 2 * (i / 8));
        const double v = y[i] / ((0.5 + sc) * 0.25);
        ASSERT_TRUE(in(v, {8, 25, 43})) << v;
        if (i % 8 < 7) {
          ASSERT_EQ(v < 0, ((q >> (9 + i % 8)) & 1) != 0);
        }
      }
    }
    {  // IQ2_S: explicit sign bytes at 34.., scales at 74..
      auto b = block(82);
      put_half(b, 0, 0x3C00);
      const auto y = decode(ggml::iq2_s, b, 256);
      for (int i = 0; i < 256; ++i) {
        const int sc = i % 32 < 16 ? b[74 + i / 32] & 15 : b[74 + i / 32] >> 4;
        const double v = y[i] / ((0.5 + sc) * 0.25);
        ASSERT_TRUE(in(v, {8, 25, 43})) << v;
        ASSERT_EQ(v < 0, ((b[34 + i / 8] >> (i % 8)) & 1) != 0);
      }
    }
    {  // IQ3_XXS: scales and signs after the 64 index bytes; grid values 4, 12, ..., 62.
      auto b = block(98);
      put_half(b, 0, 0x3C00);
      const auto y = decode(ggml::iq3_xxs, b, 256);
      for (int i = 0; i < 256; ++i) {
        const std::uint32_t aux = u32(b, 66 + 4 * (i / 32));
        const double v = y[i] / ((0.5 + (aux >> 28)) * 0.5);
        ASSERT_TRUE(in(v, {4, 12, 20, 28, 36, 44, 52, 62})) << v;
        if (i % 8 < 7) {
          ASSERT_EQ(v < 0, ((aux >> (7 * (i % 32 / 8) + i % 8)) & 1) != 0);
        }
      }
    }
    {  // IQ3_S: odd scales 1 + 2s per 32 (nibbles at 106..), sign bytes at 74..; grid 1, 3, ..., 15.
      auto b = block(110);
      put_half(b, 0, 0x3C00);
      const auto y = decode(ggml::iq3_s, b, 256);
      for (int i = 0; i < 256; ++i) {
        const int sc = (i / 32) % 2 == 0 ? b[106 + i / 64] & 15 : b[106 + i / 64] >> 4;
        const double v = y[i] / (1 + 2 * sc);
        ASSERT_TRUE(in(v, {1, 3, 5, 7, 9, 11, 13, 15})) << v;
        ASSERT_EQ(v < 0, ((b[74 + i / 8] >> (i % 8)) & 1) != 0);
      }
    }
    {  // IQ1_S: per 32, uint16 at 34..: scale 2s + 1 (bits 12..14), delta -+1/8 (bit 15); grid -1, 0, 1.
      auto b = block(50);
      put_half(b, 0, 0x3C00);
      const auto y = decode(ggml::iq1_s, b, 256);
      for (int i = 0; i < 256; ++i) {
        const unsigned qh = u16(b, 34 + 2 * (i / 32));
        const double g = y[i] / (2 * ((qh >> 12) & 7) + 1) - (qh & 0x8000 ? -0.125 : 0.125);
        ASSERT_TRUE(in(g, {0, 1})) << g;
      }
    }
    {  // IQ1_M: the f16 scale spread over the top nibbles of the four uint16 scales (here 1.0).
      auto b = block(56);
      for (int k = 0; k < 4; ++k) b[48 + 2 * k + 1] = static_cast<std::uint8_t>((b[48 + 2 * k + 1] & 0x0F) | ((0x3C00 >> (4 * k)) & 15) << 4);
      const auto y = decode(ggml::iq1_m, b, 256);
      for (int i = 0; i < 256; ++i) {
        const unsigned sc = u16(b, 48 + 2 * (i / 64));
        const int s = (sc >> (6 * ((i / 32) % 2) + 3 * ((i % 32) / 16))) & 7;
        const int qh = b[32 + i / 16];
        const double delta = (qh >> (4 * ((i % 16) / 8))) & 8 ? -0.125 : 0.125;
        const double g = y[i] / (2 * s + 1) - delta;
        ASSERT_TRUE(in(g, {0, 1})) << i << " " << g;
      }
    }
  }
}

// NVFP4: per 16 weights a UE4M3 scale (4 exponent bits, bias 7, 3 mantissa bits; 0x7F reads as
// 0 in ggml) times FP4 E2M1 values. Every scale byte and nibble.
TEST(GgmlDequant, Nvfp4AllScalesAndCodes) {
  const auto e2m1 = [](int c) {
    const int s = c >> 3, e = (c >> 1) & 3, m = c & 1;
    const double mag = e == 0 ? 0.5 * m : std::ldexp(1.0 + 0.5 * m, e - 1);
    return s ? -mag : mag;
  };
  const auto ue4m3 = [](int x) {
    const int e = (x >> 3) & 15, m = x & 7;
    if (x == 0x7F) return 0.0;  // ggml zeroes this code only; bit 7 is otherwise ignored
    return e == 0 ? std::ldexp(m, -9) : std::ldexp(1.0 + m / 8.0, e - 7);
  };
  ASSERT_EQ(ggml::block_bytes(ggml::nvfp4), 36u);
  for (int x = 0; x < 256; x += 4) {
    std::vector<std::uint8_t> b(36);
    for (int s = 0; s < 4; ++s) b[s] = static_cast<std::uint8_t>(x + s);
    for (int j = 0; j < 32; ++j) b[4 + j] = static_cast<std::uint8_t>((j % 16) | ((j * 7) % 16) << 4);
    const auto y = decode(ggml::nvfp4, b, 64);
    for (int s = 0; s < 4; ++s)
      for (int j = 0; j < 8; ++j) {
        const int byte = b[4 + 8 * s + j];
        ASSERT_EQ(y[16 * s + j], static_cast<float>(e2m1(byte & 15) * ue4m3(x + s))) << x + s << " " << j;
        ASSERT_EQ(y[16 * s + j + 8], static_cast<float>(e2m1(byte >> 4) * ue4m3(x + s))) << x + s << " " << j;
      }
  }
}

// Q1_0 / Q2_0: bits and 2-bit codes from the low end of each byte.
TEST(GgmlDequant, Q1Q2Codes) {
  std::vector<std::uint8_t> b(18);
  put_half(b, 0, 0x4100);  // 2.5
  for (int j = 0; j < 16; ++j) b[2 + j] = static_cast<std::uint8_t>(j * 37 + 11);
  const auto y1 = decode(ggml::q1_0, b, 128);
  for (int i = 0; i < 128; ++i) ASSERT_EQ(y1[i], ((b[2 + i / 8] >> (i % 8)) & 1) ? 2.5f : -2.5f) << i;
  const auto y2 = decode(ggml::q2_0, b, 64);
  for (int i = 0; i < 64; ++i) ASSERT_EQ(y2[i], 2.5f * static_cast<float>(((b[2 + i / 4] >> (2 * (i % 4))) & 3) - 1)) << i;
}

// The SIMD block decoders against the scalar ones (ggml's arithmetic, checked bit-exact against
// ggml above) on random blocks: every byte random, the f16 scales included (so subnormal,
// infinite and NaN scales occur too).
TEST(GgmlDequant, SimdDecodersAreBitwiseTheScalarOnes) {
  if (!lowp::isa_available(lowp::Isa::avx2)) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 gen(17);
  for (const std::uint32_t type : {ggml::q8_0, ggml::q4_k, ggml::q6_k}) {
    const std::size_t blocks = 4096, n = blocks * ggml::block_size(type);
    std::vector<std::uint8_t> bytes(blocks * ggml::block_bytes(type));
    for (auto& b : bytes) b = static_cast<std::uint8_t>(gen());
    std::vector<float> scalar(n), simd(n);
    ggml::dequantize(type, bytes.data(), scalar.data(), n, lowp::Isa::scalar);
    ggml::dequantize(type, bytes.data(), simd.data(), n, lowp::Isa::avx2);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < n; ++i) differ += std::bit_cast<std::uint32_t>(scalar[i]) != std::bit_cast<std::uint32_t>(simd[i]);
    EXPECT_EQ(differ, 0u) << ggml::type_name(type);
  }
}

// Edge f16 scales: zero, -0, the smallest and largest subnormals, +-1, +-max, +-infinity, a
// quiet and a signalling NaN.
constexpr std::uint16_t kF16Edges[] = {0x0000, 0x8000, 0x0001, 0x03FF, 0x3C00, 0xBC00,
                                       0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x7C01};

// Where a block of Q4_0, Q8_0 (d), Q4_K, Q5_K (d, dmin) or Q6_K (d) keeps its f16 scales.
std::vector<std::size_t> f16_fields(std::uint32_t type) {
  if (type == ggml::q6_k) return {208};
  if (type == ggml::q4_k || type == ggml::q5_k) return {0, 2};
  return {0};
}

// The lane decoders (8 rows at once, element k of row r at out[k * ld + r]) against the scalar
// decoders (ggml's arithmetic, checked bit-exact above), row by row: random blocks at odd
// addresses, with the f16 scales of some blocks set to the edge values (zero, -0, the smallest
// and largest subnormals, +-1, +-max, +-infinity, a quiet and a signalling NaN), over every
// 32-aligned span that a 64-element call covers and over whole rows.
TEST(GgmlDequant, LaneDecodersAreBitwiseTheScalarOnes) {
  if (!lowp::isa_available(lowp::Isa::avx2)) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 gen(23);
  for (const std::uint32_t type : {ggml::q4_0, ggml::q8_0, ggml::q4_k, ggml::q5_k, ggml::q6_k}) {
    const ggml::LaneDecoder lanes = ggml::lane_decoder(type, lowp::Isa::avx2);
    ASSERT_NE(lanes, nullptr) << ggml::type_name(type);
    EXPECT_EQ(ggml::lane_decoder(type, lowp::Isa::scalar), nullptr);
    const std::size_t K = 768, bb = ggml::block_bytes(type), blocks = K / ggml::block_size(type);
    const std::vector<std::size_t> at = f16_fields(type);
    for (int trial = 0; trial < 40; ++trial) {
      std::vector<std::uint8_t> bytes(8 * (blocks * bb + 3));
      for (auto& b : bytes) b = static_cast<std::uint8_t>(gen());
      const void* rows[8];
      std::vector<float> want(8 * K);
      for (std::size_t r = 0; r < 8; ++r) {
        std::uint8_t* row = bytes.data() + r * (blocks * bb + 3) + 1 + r % 3;  // not aligned
        for (std::size_t b = 0; b < blocks; ++b)
          for (std::size_t o : at)
            if (gen() % 3 == 0) {
              const std::uint16_t h = kF16Edges[gen() % std::size(kF16Edges)];
              std::memcpy(row + b * bb + o, &h, 2);
            }
        rows[r] = row;
        ggml::dequantize(type, row, want.data() + r * K, K, lowp::Isa::scalar);
      }
      const std::size_t ld = 11;  // wider than the 8 lanes: the stride is the caller's
      std::vector<float> got(K * ld);
      for (std::size_t k0 = 0; k0 < K; k0 += 64) lanes(rows, k0, 64, got.data() + k0 * ld, ld);
      std::vector<float> whole(K * ld);
      lanes(rows, 0, K, whole.data(), ld);
      std::size_t differ = 0;
      for (std::size_t r = 0; r < 8; ++r)
        for (std::size_t k = 0; k < K; ++k) {
          const std::uint32_t w = std::bit_cast<std::uint32_t>(want[r * K + k]);
          differ += w != std::bit_cast<std::uint32_t>(got[k * ld + r]);
          differ += w != std::bit_cast<std::uint32_t>(whole[k * ld + r]);
        }
      ASSERT_EQ(differ, 0u) << ggml::type_name(type) << " trial " << trial;
    }
  }
}

// Each ISA's lane dots (64 rows' decode and fma chains in one pass) against the fma chain written
// here over the scalar decoders' floats, row by row: random blocks at odd addresses, the f16
// scales of every fourth row's blocks sometimes set to the edge values above and all others
// finite (a NaN or infinite weight would hide the rest of its row's chain) but for one Q4_K/Q5_K
// block whose infinite d meets a zero quant and a NaN dmin (where one fused (d sc) q - dmin m
// would return another NaN than the decoder's multiply and subtract), chains continued from random starting sums over spans that begin on
// every 32-element sub-block of a 256-element block (each type's header and nibble-pair
// reloads) and end anywhere after; the same rows' sums over the whole row in one call. Each ISA's
// interleaved dots run on the same rows laid out here as InterleavedRows lays them (groups of
// 16 rows, word w of row r at (16 w + r) W for the dot's word of W bytes, InterleavedDot::word,
// at an odd address), against the same chains. The mutants in mind there: a byte of a word
// taken from the wrong lane or shift (AVX-512's Q4_K words: its 8 (c % 4), its 4 for the high
// nibbles, its header's d and dmin halves), which give other weights.
TEST(GgmlDequant, LaneDotsAreTheFmaChainsOverTheScalarDecoders) {
  if (!lowp::isa_available(lowp::Isa::avx2)) GTEST_SKIP() << "no AVX2 on this CPU: no lane dot is built to run";
  constexpr std::size_t R = ggml::kLaneDotRows;
  std::mt19937 gen(29);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const lowp::Isa isa : {lowp::Isa::avx2, lowp::Isa::avx512})
  for (const std::uint32_t type : {ggml::q4_0, ggml::q8_0, ggml::q4_k, ggml::q5_k, ggml::q6_k}) {
    if (!lowp::isa_available(isa)) {
      // Not "[  SKIPPED ]": CTest would then report the whole test skipped though AVX2's ran.
      std::printf("[   NOTE   ] %s lane dots not checked: not available on this CPU\n",
                  std::string(lowp::isa_name(isa)).c_str());
      break;
    }
    const ggml::LaneDot dot = ggml::lane_dot(type, isa);
    ASSERT_NE(dot, nullptr) << ggml::type_name(type) << " " << lowp::isa_name(isa);
    EXPECT_EQ(ggml::lane_dot(type, lowp::Isa::scalar), nullptr);
    const ggml::InterleavedDot il = ggml::lane_dot_interleaved(type, isa);
    const ggml::LaneDot il_dot = il.dot;
    ASSERT_NE(il_dot, nullptr) << ggml::type_name(type) << " " << lowp::isa_name(isa);
    EXPECT_EQ(ggml::lane_dot_interleaved(type, lowp::Isa::scalar).dot, nullptr);
    const std::size_t K = 512, bb = ggml::block_bytes(type), blocks = K / ggml::block_size(type);
    const std::vector<std::size_t> at = f16_fields(type);
    for (int trial = 0; trial < 6; ++trial) {
      // Odd trials keep every scale finite (the first 8 edges), as the K-quant dots' fused path
      // needs of a block's rows; even ones put infinities and NaNs in some blocks.
      const bool finite_scales = trial % 2 == 1;
      std::vector<std::uint8_t> bytes(R * (blocks * bb + 3));
      for (auto& b : bytes) b = static_cast<std::uint8_t>(gen());
      const void* rows[R];
      std::vector<float> w(R * K);
      for (std::size_t r = 0; r < R; ++r) {
        std::uint8_t* row = bytes.data() + r * (blocks * bb + 3) + 1 + r % 3;  // not aligned
        for (std::size_t b = 0; b < blocks; ++b)
          for (std::size_t o : at) {
            const std::size_t edges = finite_scales ? 8 : std::size(kF16Edges);
            const std::uint16_t h = r % 4 == 0 && gen() % 3 == 0 ? kF16Edges[gen() % edges]
                                                                 : static_cast<std::uint16_t>(gen() & 0xFBFF);  // exponent < 31
            std::memcpy(row + b * bb + o, &h, 2);
          }
        if (!finite_scales && r == 1 && (type == ggml::q4_k || type == ggml::q5_k)) {
          // d = +inf, dmin a NaN with a payload, sc_0 > 0 and element 0 zero: the decoder's
          // (d sc_0) 0 is the invalid operation's NaN and the sub returns it, not dmin's NaN.
          const std::uint16_t inf = 0x7C00, nan = 0x7E55;
          std::memcpy(row, &inf, 2);
          std::memcpy(row + 2, &nan, 2);
          row[4] = static_cast<std::uint8_t>((row[4] & 0xC0) | 0x05);
          row[type == ggml::q4_k ? 16 : 48] &= 0xF0;
          if (type == ggml::q5_k) row[16] &= 0xFE;
        }
        rows[r] = row;
        ggml::dequantize(type, row, w.data() + r * K, K, lowp::Isa::scalar);
      }
      constexpr std::size_t G = ggml::kLaneDotInterleave;
      const std::size_t row_bytes = blocks * bb, W = il.word;
      ASSERT_EQ(bb % W, 0u);
      std::vector<std::uint8_t> il(R * row_bytes + 1);
      const void* il_rows[R];
      for (std::size_t r = 0; r < R; ++r) {
        il_rows[r] = il.data() + 1 + r * row_bytes;  // the kernel reads only each group's first
        for (std::size_t b = 0; b < row_bytes; ++b)
          il[1 + r / G * G * row_bytes + (b / W * G + r % G) * W + b % W] = static_cast<const std::uint8_t*>(rows[r])[b];
      }
      std::vector<float> x(K), start(R);
      for (auto& v : x) v = normal(gen);
      for (auto& v : start) v = normal(gen);
      const auto want = [&](std::size_t r, std::size_t k0, std::size_t k1) {
        float a = start[r];
        for (std::size_t k = k0; k < k1; ++k) a = std::fma(x[k], w[r * K + k], a);
        return a;
      };
      std::size_t differ = 0, spans = 0, finite = 0;
      for (std::size_t k0 = 0; k0 < 256; k0 += 32)
        for (std::size_t k1 = k0 + 32; k1 <= K; k1 += 32 * (1 + gen() % 5), ++spans) {
          std::vector<float> acc = start, acc_il = start;
          const std::size_t mid = k0 + (k1 - k0) / 64 * 32;  // two calls, the chain carried through acc
          if (mid > k0) dot(rows, k0, mid - k0, x.data() + k0, acc.data());
          dot(rows, mid, k1 - mid, x.data() + mid, acc.data());
          if (mid > k0) il_dot(il_rows, k0, mid - k0, x.data() + k0, acc_il.data());
          il_dot(il_rows, mid, k1 - mid, x.data() + mid, acc_il.data());
          for (std::size_t r = 0; r < R; ++r) {
            const std::uint32_t chain = std::bit_cast<std::uint32_t>(want(r, k0, k1));
            differ += chain != std::bit_cast<std::uint32_t>(acc[r]);
            differ += chain != std::bit_cast<std::uint32_t>(acc_il[r]);
            finite += std::isfinite(acc[r]);
          }
        }
      ASSERT_GT(spans, 8u);
      ASSERT_GT(finite, spans * R / 2) << "too few finite chains to compare";
      ASSERT_EQ(differ, 0u) << ggml::type_name(type) << " " << lowp::isa_name(isa) << " trial " << trial;
    }
  }
}

}  // namespace
