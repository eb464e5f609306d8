// Reading llama.cpp's importance-matrix file: the values its README lists (written by
// llama-imatrix for model A), and one clear error for each kind of malformed file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "lowp/numerics/error.hpp"
#include "lowp/quant/calibrate_imatrix.hpp"

namespace lowp::quant {
namespace {

const std::string kFile = std::string(LOWP_SHARED_DIR) + "/gguf/imatrix/modelA.imatrix.dat";

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string write_temp(const std::string& name, const std::string& bytes) {
  const std::string p = (std::filesystem::temp_directory_path() / ("lowp_imatrix_" + name)).string();
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

// The message of the lowp::Error read_imatrix throws on `bytes`, "" when it does not throw.
std::string error_of(const std::string& name, const std::string& bytes) {
  const std::string p = write_temp(name, bytes);
  std::string msg;
  try {
    read_imatrix(p);
  } catch (const Error& e) {
    msg = e.what();
  }
  std::filesystem::remove(p);
  return msg;
}

void put_i32(std::string& b, std::size_t at, std::int32_t v) { std::memcpy(b.data() + at, &v, 4); }

TEST(CalibrateImatrix, ReadsLlamaCppValues) {
  if (!std::filesystem::exists(kFile)) GTEST_SKIP() << "needs " << kFile << " (../shared/gguf/imatrix)";
  const ImatrixFile f = read_imatrix(kFile);
  EXPECT_EQ(f.entries.size(), 14u);
  EXPECT_EQ(f.chunks, 40);
  EXPECT_EQ(f.dataset, "calib.txt");
  struct Want {
    const char* name;
    std::size_t nval;
    float v[3];
  };
  // ../shared/gguf/imatrix/README.md
  const Want want[] = {
      {"blk.0.attn_q.weight", 256, {51.610558f, 40.489418f, 39.975975f}},
      {"blk.0.attn_output.weight", 256, {15.685464f, 208.00427f, 12.033155f}},
      {"blk.0.ffn_down.weight", 768, {172.4071f, 53.302315f, 0.62894356f}},
      {"blk.1.ffn_down.weight", 768, {4.3967056f, 2.4022734f, 22.117008f}},
  };
  for (const Want& w : want) {
    const ImatrixEntry* e = f.find(w.name);
    ASSERT_NE(e, nullptr) << w.name;
    EXPECT_EQ(e->ncall, 40) << w.name;
    ASSERT_EQ(e->values.size(), w.nval) << w.name;
    for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(e->values[i], w.v[i]) << w.name << " [" << i << "]";
    EXPECT_FLOAT_EQ(e->importance()[0], w.v[0] / 40) << w.name;  // the mean of x^2
  }
  // q, k and v share their input, so llama.cpp wrote the same values.
  for (const char* other : {"blk.0.attn_k.weight", "blk.0.attn_v.weight"}) {
    const ImatrixEntry* e = f.find(other);
    ASSERT_NE(e, nullptr) << other;
    EXPECT_EQ(e->values, f.find("blk.0.attn_q.weight")->values) << other;
  }
  EXPECT_EQ(f.find("output.weight"), nullptr);
}

TEST(CalibrateImatrix, MalformedFilesAreOneError) {
  if (!std::filesystem::exists(kFile)) GTEST_SKIP() << "needs " << kFile << " (../shared/gguf/imatrix)";
  const std::string good = slurp(kFile);
  // First entry: count (4), name length (4) at 4, the name, ncall, nval, values.
  std::int32_t len0;
  std::memcpy(&len0, good.data() + 4, 4);
  const std::size_t ncall_at = 8 + static_cast<std::size_t>(len0), nval_at = ncall_at + 4, v0_at = nval_at + 4;

  for (std::size_t cut : {std::size_t{0}, std::size_t{2}, std::size_t{6}, v0_at + 10, good.size() / 2, good.size() - 3}) {
    const std::string m = error_of("cut", good.substr(0, cut));
    EXPECT_NE(m.find("imatrix file"), std::string::npos) << "cut at " << cut << ": " << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  std::string b = good;
  put_i32(b, 0, -3);
  EXPECT_NE(error_of("count", b).find("bad entry count -3"), std::string::npos);
  b = good;
  put_i32(b, 0, 1 << 30);
  EXPECT_NE(error_of("count2", b).find("bad entry count"), std::string::npos);
  b = good;
  put_i32(b, nval_at, 1 << 28);
  EXPECT_NE(error_of("nval", b).find("bad value count"), std::string::npos);
  b = good;
  put_i32(b, ncall_at, -1);
  EXPECT_NE(error_of("ncall", b).find("negative ncall"), std::string::npos);
  b = good;
  const float nan = std::nanf("");
  std::memcpy(b.data() + v0_at + 8, &nan, 4);
  EXPECT_NE(error_of("nan", b).find("value 2 is nan"), std::string::npos) << error_of("nan", b);
  EXPECT_NE(error_of("trailing", good + "xyz").find("trailing"), std::string::npos) << error_of("trailing", good + "xyz");
  EXPECT_NE(error_of("gguf", "GGUF" + good).find("GGUF"), std::string::npos);
  EXPECT_THROW(read_imatrix("/nonexistent/lowp.imatrix"), Error);
}

}  // namespace
}  // namespace lowp::quant
