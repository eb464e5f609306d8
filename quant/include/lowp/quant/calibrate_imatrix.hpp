// Reading llama.cpp's importance-matrix files (llama-imatrix, the legacy `.dat` layout).
//
// Little-endian: int32 entry count; per entry int32 name length, the name, int32 ncall,
// int32 nval, float32 values[nval]; optionally int32 the last chunk count, int32 length and
// the calibration file's name. Each value is llama.cpp's mean of x_j^2 over the calibration
// tokens times ncall, so importance() divides by ncall.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lowp::quant {

struct ImatrixEntry {
  std::string name;  // e.g. blk.0.attn_q.weight
  std::int32_t ncall = 0;
  std::vector<float> values;  // as stored
  std::vector<float> importance() const;  // values / ncall: the mean of x_j^2
};
struct ImatrixFile {
  std::vector<ImatrixEntry> entries;
  std::int32_t chunks = 0;  // 0 when the file does not say
  std::string dataset;
  const ImatrixEntry* find(const std::string& name) const;  // nullptr when absent
};

// Throws lowp::Error naming the file and the problem (unreadable, truncated, a count out of
// range, a NaN / Inf / negative value, trailing bytes, a GGUF imatrix).
ImatrixFile read_imatrix(const std::string& path);

}  // namespace lowp::quant
