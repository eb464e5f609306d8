#include "io/load_common.hpp"

#include <algorithm>

#include "lowp/numerics/half_runs.hpp"

namespace lowp::accuracy::detail {

std::vector<float> to_f32(StoredType type, Bytes data, std::uint64_t count) {
  std::vector<float> out(count);
  const std::uint8_t* p = data.data();
  switch (type) {
    case StoredType::f32: std::memcpy(out.data(), p, 4 * count); break;
    case StoredType::f16: half_runs().f16_to_f32(p, out.data(), count); break;
    case StoredType::bf16: half_runs().bf16_to_f32(p, out.data(), count); break;
  }
  return out;
}

std::vector<std::uint32_t> hf_row_map(int heads, int hd) {
  std::vector<std::uint32_t> map(static_cast<std::size_t>(heads) * static_cast<std::size_t>(hd));
  for (int h = 0; h < heads; ++h)
    for (int j = 0; j < hd; ++j)
      map[static_cast<std::size_t>(h * hd + (j < hd / 2 ? 2 * j : 2 * (j - hd / 2) + 1))] = static_cast<std::uint32_t>(h * hd + j);
  return map;
}

std::vector<float> unpermute(const std::vector<float>& w, int heads, int hd, int cols) {
  std::vector<float> out(w.size());
  const std::size_t c = static_cast<std::size_t>(cols);
  for (int h = 0; h < heads; ++h)
    for (int j = 0; j < hd; ++j) {
      const int dst = h * hd + (j < hd / 2 ? 2 * j : 2 * (j - hd / 2) + 1);
      std::copy_n(&w[static_cast<std::size_t>(h * hd + j) * c], c, &out[static_cast<std::size_t>(dst) * c]);
    }
  return out;
}

int positive_int(std::int64_t v, const std::string& key, const std::string& file) {
  if (v <= 0 || v > INT32_MAX)
    throw Error(file + ": " + key + " is " + std::to_string(v) + ", must be in [1, 2^31)");
  return static_cast<int>(v);
}

}  // namespace lowp::accuracy::detail
