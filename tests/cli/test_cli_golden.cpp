// `lowp golden` in-process: the safetensors file read back here (its own small parser of the
// header, lowp's JSON reader for the text), the values re-derived from the stored codes and
// scales with the scalar codec, determinism, and the one-line errors.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../accuracy/model_files.hpp"
#include "cli/cli_run.hpp"
#include "io/json.hpp"
#include "lowp/formats/codec.hpp"
#include "lowp/formats/registry.hpp"

namespace {

namespace fs = std::filesystem;
using lowp::test::lowp_run;
using lowp::test::Result;

struct Tensor {
  std::string dtype;
  std::vector<std::size_t> shape;
  std::string bytes;
  template <class T>
  std::vector<T> as() const {
    std::vector<T> v(bytes.size() / sizeof(T));
    std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
    return v;
  }
};
struct File {
  std::map<std::string, Tensor> t;
  std::map<std::string, std::string> meta;
};

File read_golden(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  const std::string raw = s.str();
  EXPECT_GE(raw.size(), 8u);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | static_cast<unsigned char>(raw[static_cast<std::size_t>(i)]);
  EXPECT_EQ(n % 8, 0u);
  const lowp::accuracy::detail::Json h = lowp::accuracy::detail::parse_json(raw.substr(8, n), path);
  File out;
  std::size_t end = 0;
  for (const auto& m : h.fields) {
    if (m.key == "__metadata__") {
      for (const auto& kv : m.value.fields) out.meta[kv.key] = kv.value.str;
      continue;
    }
    Tensor t;
    t.dtype = m.value.get("dtype")->str;
    for (const auto& d : m.value.get("shape")->items) t.shape.push_back(static_cast<std::size_t>(d.u));
    const auto& off = m.value.get("data_offsets")->items;
    t.bytes = raw.substr(8 + n + off[0].u, off[1].u - off[0].u);
    end = std::max<std::size_t>(end, off[1].u);
    out.t[m.key] = t;
  }
  EXPECT_EQ(8 + n + end, raw.size());
  return out;
}

std::string tmp(const std::string& name) {
  static const std::string dir = lowp::test::temp_dir("cli_golden");  // made (emptied) once per process
  return dir + "/" + name;
}

TEST(CliGolden, Mxfp8ValuesAreCodeTimesScale) {
  const std::string path = tmp("mxfp8.safetensors");
  const Result r = lowp_run({"golden", "--spec", "e4m3:b32:even", "--rows", "6", "--cols", "96", "--seed", "3", "--out", path});
  ASSERT_EQ(r.code, 0) << r.err;
  const File f = read_golden(path);
  EXPECT_EQ(f.meta.at("lowp_golden_layout"), "1");
  EXPECT_EQ(f.meta.at("spec"), "e4m3:b32:even");
  EXPECT_EQ(f.meta.at("scale_rule"), "even");
  EXPECT_EQ(f.meta.at("seed"), "3");
  EXPECT_EQ(f.t.at("codes").dtype, "U8");
  EXPECT_EQ(f.t.at("codes").shape, (std::vector<std::size_t>{6, 96}));
  EXPECT_EQ(f.t.at("scale_codes").shape, (std::vector<std::size_t>{6, 3}));
  EXPECT_EQ(f.t.count("tensor_scale"), 0u);
  EXPECT_EQ(f.t.count("multipliers"), 0u);
  const auto codes = f.t.at("codes").as<std::uint8_t>();
  const auto sc = f.t.at("scale_codes").as<std::uint8_t>();
  const auto deq = f.t.at("dequantized").as<float>();
  const auto x = f.t.at("input").as<float>();
  EXPECT_EQ(f.t.at("codes_packed").as<std::uint8_t>(), codes);  // 8-bit: one byte each
  const lowp::Format e4m3 = lowp::parse_format("e4m3");
  std::size_t distinct = 0;
  for (std::size_t i = 0; i < codes.size(); ++i) {
    const int e = sc[i / 32] - 127;
    EXPECT_EQ(static_cast<double>(deq[i]), std::ldexp(lowp::decode(e4m3, codes[i]), e)) << i;
    // The code is x / 2^e rounded to nearest-even (x / 2^e is exact here), saturating.
    lowp::CastOptions o;
    o.saturate = true;
    EXPECT_EQ(codes[i], lowp::encode(e4m3, std::ldexp(static_cast<double>(x[i]), -e), o)) << i;
    if (i % 32 == 0 && (i == 0 || sc[i / 32] != sc[i / 32 - 1])) ++distinct;
  }
  EXPECT_GT(distinct, 3u);
}

TEST(CliGolden, Nvfp4PacksTwoCodesPerByteLowNibbleFirst) {
  const std::string path = tmp("nvfp4.safetensors");
  ASSERT_EQ(lowp_run({"golden", "--spec", "nvfp4", "--rows", "3", "--cols", "48", "--out", path}).code, 0);
  const File f = read_golden(path);
  const auto codes = f.t.at("codes").as<std::uint8_t>();
  const auto packed = f.t.at("codes_packed").as<std::uint8_t>();
  ASSERT_EQ(packed.size(), codes.size() / 2);
  for (std::size_t i = 0; i < codes.size(); ++i) EXPECT_EQ(codes[i], (packed[i / 2] >> (4 * (i % 2))) & 0xf) << i;
  EXPECT_EQ(f.t.at("tensor_scale").shape, std::vector<std::size_t>{});
  EXPECT_EQ(f.t.at("scale_codes").shape, (std::vector<std::size_t>{3, 3}));
  // value = code * (tensor_scale * block scale), both products in float32
  const float ts = f.t.at("tensor_scale").as<float>()[0];
  const auto scales = f.t.at("scales").as<float>();
  const auto deq = f.t.at("dequantized").as<float>();
  const lowp::Format e2m1 = lowp::parse_format("e2m1"), ue4m3 = lowp::parse_format("ue4m3");
  const auto sc = f.t.at("scale_codes").as<std::uint8_t>();
  for (std::size_t g = 0; g < sc.size(); ++g) EXPECT_EQ(scales[g], static_cast<float>(lowp::decode(ue4m3, sc[g])));
  for (std::size_t i = 0; i < codes.size(); ++i)
    EXPECT_EQ(deq[i], static_cast<float>(lowp::decode(e2m1, codes[i])) * (ts * scales[i / 16])) << i;
}

TEST(CliGolden, SameSeedSameBytesAnyThreadCount) {
  // 256 x 512 elements: large enough for quantize's OpenMP path.
  const std::string a = tmp("a.safetensors"), b = tmp("b.safetensors"), c = tmp("c.safetensors");
  ASSERT_EQ(lowp_run({"golden", "--spec", "mxfp4", "--rows", "256", "--cols", "512", "--seed", "9", "--out", a}).code, 0);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  ASSERT_EQ(lowp_run({"golden", "--spec", "mxfp4", "--rows", "256", "--cols", "512", "--seed", "9", "--out", b}).code, 0);
  omp_set_num_threads(threads);
  ASSERT_EQ(lowp_run({"golden", "--spec", "mxfp4", "--rows", "256", "--cols", "512", "--seed", "10", "--out", c}).code, 0);
  const auto bytes = [](const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  EXPECT_EQ(bytes(a), bytes(b));
  EXPECT_NE(bytes(a), bytes(c));
}

TEST(CliGolden, RecipeStepHasEveryTensor) {
  const std::string path = tmp("step.safetensors");
  const Result r = lowp_run({"golden", "--recipe", "nvfp4-train", "--rows", "16", "--cols", "64", "--out", path});
  ASSERT_EQ(r.code, 0) << r.err;
  const File f = read_golden(path);
  EXPECT_EQ(f.meta.at("mode"), "recipe");
  EXPECT_EQ(f.meta.at("recipe"), "nvfp4-train");
  for (const char* n : {"X", "W", "dY", "Y", "dX", "dW", "fwd.X", "fwd.W", "dgrad.dY", "dgrad.Wt", "wgrad.dYt", "wgrad.Xt"})
    EXPECT_EQ(f.t.count(n), 1u) << n;
  EXPECT_EQ(f.t.at("wgrad.Xt").shape, (std::vector<std::size_t>{64, 16}));
  // nvfp4-train: the forward's operands are the float data quantized by the spec (codes stored);
  // dgrad's dY rounds stochastically and the wgrad rotates first (no codes).
  EXPECT_EQ(f.meta.at("fwd.X.codes"), "stored");
  EXPECT_EQ(f.t.at("fwd.X.scale_codes").shape, (std::vector<std::size_t>{16, 4}));
  EXPECT_EQ(f.t.at("fwd.X.tensor_scale").shape, std::vector<std::size_t>{});
  EXPECT_EQ(f.meta.at("dgrad.dY.codes"), "absent: stochastic rounding");
  EXPECT_EQ(f.meta.at("wgrad.Xt.codes"), "absent: rotated first");
  EXPECT_EQ(f.t.count("wgrad.Xt.codes"), 0u);
  const Result sc = lowp_run({"golden", "--recipe", "scalify", "--rows", "2", "--cols", "32", "--out", path + ".s"});
  EXPECT_EQ(sc.code, 2);
  EXPECT_EQ(std::count(sc.err.begin(), sc.err.end(), '\n'), 1) << sc.err;
  // Y = fwd.X fwd.W^T, accumulated in float32: within K * 2^-24 * sum |a b| of the exact product.
  const auto A = f.t.at("fwd.X").as<float>(), B = f.t.at("fwd.W").as<float>(), Y = f.t.at("Y").as<float>();
  for (std::size_t i = 0; i < 16; ++i)
    for (std::size_t j = 0; j < 64; ++j) {
      double s = 0, m = 0;
      for (std::size_t k = 0; k < 64; ++k) {
        s += static_cast<double>(A[i * 64 + k]) * B[j * 64 + k];
        m += std::fabs(static_cast<double>(A[i * 64 + k]) * B[j * 64 + k]);
      }
      EXPECT_LE(std::fabs(Y[i * 64 + j] - s), 64 * 0x1p-24 * m + 1e-30) << i << " " << j;
    }
}

void expect_one_line(const Result& r, int code, const std::string& starts) {
  EXPECT_EQ(r.code, code) << r.err;
  EXPECT_EQ(r.err.rfind(starts, 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(CliGolden, ErrorsAreOneLine) {
  const std::string out = tmp("err.safetensors");
  expect_one_line(lowp_run({"golden", "--spec", "e9m9", "--rows", "2", "--cols", "32", "--out", out}), 2,
                  "lowp golden: quantization spec 'e9m9'");
  expect_one_line(lowp_run({"golden", "--spec", "mxfp8", "--rows", "2", "--cols", "40", "--out", out}), 2,
                  "lowp golden: tensor 2x40: 40 columns are not a multiple of the block size 32");
  expect_one_line(lowp_run({"golden", "--spec", "mxfp8", "--rows", "0", "--cols", "32", "--out", out}), 2,
                  "lowp golden: --rows 0 is outside [1, ");
  expect_one_line(lowp_run({"golden", "--spec", "mxfp8", "--rows", "2", "--cols", "32"}), 2, "lowp golden: --out is required");
  expect_one_line(lowp_run({"golden", "--rows", "2", "--cols", "32", "--out", out}), 2,
                  "lowp golden: give exactly one of --spec and --recipe");
  // A recipe file without `pad = on` (the built-in MX names pad): 20 tokens do not fill a block.
  const std::string unpadded = tmp("te.recipe");
  std::ofstream(unpadded) << "name = te\nlinear = mxfp8-te\n";
  expect_one_line(lowp_run({"golden", "--recipe", unpadded, "--rows", "20", "--cols", "64", "--out", out}), 2,
                  "lowp golden: linear 'mxfp8-te' wgrad dY^T (64x20): tensor 64x20: 20 columns are not a multiple");
  expect_one_line(lowp_run({"golden", "--recipe", "nosuch", "--rows", "2", "--cols", "32", "--out", out}), 2, "lowp golden: ");
  expect_one_line(lowp_run({"golden", "--spec", "mxfp8", "--rows", "2", "--cols", "32", "--out", "/nonexistent/dir/x.safetensors"}),
                  1, "lowp golden: ");
  EXPECT_FALSE(fs::exists(out));
  const Result help = lowp_run({"--help"});
  EXPECT_NE(help.out.find("golden"), std::string::npos);
}

}  // namespace
