// FP4/FP6 code packing for lowp.pack / lowp.unpack and for the one-code-per-element arrays of
// encode/decode (the bulk kernels read and write the packed form).
#include <cstdio>
#include <string>

#include "common.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::python {
namespace {

[[noreturn]] void bad_code(std::uint32_t c, std::size_t index, const std::string& fn, const std::string& format,
                           std::uint32_t mask) {
  char buf[64];
  std::snprintf(buf, sizeof buf, ": code 0x%x at index %zu", c, index);
  throw Error(fn + buf + " is not a " + format + " code (codes are 0.." + std::to_string(mask) + ")");
}

}  // namespace

void pack_codes(const std::uint8_t* codes, std::size_t n, int storage, std::uint32_t mask, std::uint8_t* out,
                std::size_t first, const std::string& fn, const std::string& format) {
  // One check for the whole piece: the OR of the codes has a bit above the mask iff some code does.
  std::uint8_t any = 0;
  for (std::size_t i = 0; i < n; ++i) any |= codes[i];
  if (any & ~mask)
    for (std::size_t i = 0; i < n; ++i)
      if (codes[i] > mask) bad_code(codes[i], first + i, fn, format, mask);
  if (storage == 4) {
    std::size_t i = 0;
    for (; i + 2 <= n; i += 2) out[i / 2] = static_cast<std::uint8_t>(codes[i] | codes[i + 1] << 4);
    if (i < n) out[i / 2] = codes[i];
  } else {  // 6
    std::size_t i = 0;
    auto put = [&](std::size_t g, std::uint32_t w) {
      out[3 * g] = static_cast<std::uint8_t>(w);
      out[3 * g + 1] = static_cast<std::uint8_t>(w >> 8);
      out[3 * g + 2] = static_cast<std::uint8_t>(w >> 16);
    };
    for (; i + 4 <= n; i += 4)
      put(i / 4, codes[i] | codes[i + 1] << 6 | codes[i + 2] << 12 | static_cast<std::uint32_t>(codes[i + 3]) << 18);
    if (i < n) {
      std::uint32_t w = 0;
      for (std::size_t j = 0; i + j < n; ++j) w |= static_cast<std::uint32_t>(codes[i + j]) << (6 * j);
      put(i / 4, w);
    }
  }
}

// Whole bytes / groups first (loops the compiler vectorises), then the partial tail.
void unpack_codes(const std::uint8_t* in, std::size_t n, int storage, std::uint8_t* out) {
  if (storage == 4) {
    const std::size_t pairs = n / 2;
    for (std::size_t j = 0; j < pairs; ++j) {
      out[2 * j] = in[j] & 0xf;
      out[2 * j + 1] = in[j] >> 4;
    }
    if (n % 2) out[n - 1] = in[pairs] & 0xf;
  } else {
    const std::size_t groups = n / 4;
    for (std::size_t g = 0; g < groups; ++g) {
      const std::uint32_t w = in[3 * g] | in[3 * g + 1] << 8 | static_cast<std::uint32_t>(in[3 * g + 2]) << 16;
      out[4 * g] = w & 0x3f;
      out[4 * g + 1] = (w >> 6) & 0x3f;
      out[4 * g + 2] = (w >> 12) & 0x3f;
      out[4 * g + 3] = static_cast<std::uint8_t>(w >> 18);
    }
    for (std::size_t i = 4 * groups; i < n; ++i) {
      const std::uint8_t* g = in + i / 4 * 3;
      const std::uint32_t w = g[0] | g[1] << 8 | static_cast<std::uint32_t>(g[2]) << 16;
      out[i] = (w >> (6 * (i % 4))) & 0x3f;
    }
  }
}

}  // namespace lowp::python
