#include "io/load_common.hpp"

#include <algorithm>

#include "lowp/numerics/half.hpp"

namespace lowp::accuracy::detail {

std::vector<float> to_f32(StoredType type, Bytes data, std::uint64_t count) {
  std::vector<float> out(count);
  const std::uint8_t* p = data.data();
  auto u16 = [&](std::uint64_t i) {
    std::uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    return h;
  };
  switch (type) {
    case StoredType::f32: std::memcpy(out.data(), p, 4 * count); break;
    case StoredType::f16: for (std::uint64_t i = 0; i < count; ++i) out[i] = f16_to_f32(u16(i)); break;
    case StoredType::bf16: for (std::uint64_t i = 0; i < count; ++i) out[i] = bf16_to_f32(u16(i)); break;
    case StoredType::q8_0:
      // Blocks of 32: float16 scale d, then 32 int8 q; x = d * q.
      for (std::uint64_t b = 0; b < count / 32; ++b) {
        const std::uint8_t* blk = p + 34 * b;
        std::uint16_t dh;
        std::memcpy(&dh, blk, 2);
        const float d = f16_to_f32(dh);
        for (int i = 0; i < 32; ++i) out[32 * b + i] = d * static_cast<float>(static_cast<std::int8_t>(blk[2 + i]));
      }
      break;
  }
  return out;
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
