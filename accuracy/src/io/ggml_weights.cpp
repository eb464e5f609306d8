#include "io/ggml_weights.hpp"

#include <cstring>
#include <string>
#include <vector>

#include "io/gguf_file.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/numerics/half.hpp"

namespace lowp::accuracy::detail {
namespace {

// The decoder context of each block type is its type id, kept where a pointer can reach it.
struct BlockType {
  std::uint32_t type;
  std::size_t elems, bytes;
};

void widen_blocks(const void* ctx, const void* row, std::size_t k0, std::size_t n, float* out) {
  const auto& t = *static_cast<const BlockType*>(ctx);
  ggml_dequantize(t.type, static_cast<const std::uint8_t*>(row) + k0 / t.elems * t.bytes, out, n);
}

}  // namespace

bool ggml_block_layout(std::uint32_t type, std::size_t& block_elems, std::size_t& block_bytes) {
  switch (type) {
    case ggml_q8_0: block_elems = 32; block_bytes = 34; return true;  // f16 scale d, 32 int8 q
    default: return false;
  }
}

void ggml_dequantize(std::uint32_t type, const void* blocks, float* out, std::size_t n) {
  const auto* p = static_cast<const std::uint8_t*>(blocks);
  switch (type) {
    case ggml_q8_0:
      for (std::size_t b = 0; b < n / 32; ++b) {  // x = d * q
        const std::uint8_t* blk = p + 34 * b;
        std::uint16_t dh;
        std::memcpy(&dh, blk, 2);
        const float d = f16_to_f32(dh);
        for (int i = 0; i < 32; ++i) out[32 * b + i] = d * static_cast<float>(static_cast<std::int8_t>(blk[2 + i]));
      }
      return;
    default: throw Error("ggml type " + ggml_type_name(type) + " cannot be decoded in place");
  }
}

bool ggml_mappable(std::uint32_t type) {
  std::size_t e = 0, b = 0;
  return type == ggml_f32 || type == ggml_f16 || type == ggml_bf16 || ggml_block_layout(type, e, b);
}

quant::StoredMatrix ggml_matrix(std::uint32_t type, const void* data, std::size_t rows, std::size_t cols) {
  switch (type) {
    case ggml_f32: return {quant::StoredType::f32, data, rows, cols};
    case ggml_f16: return {quant::StoredType::f16, data, rows, cols};
    case ggml_bf16: return {quant::StoredType::bf16, data, rows, cols};
    default: break;
  }
  // One context per block type, built once from ggml_block_layout (the views point at it).
  static const std::vector<BlockType> table = [] {
    std::vector<BlockType> v;
    for (std::uint32_t i = 0; i < 256; ++i)
      if (std::size_t e = 0, b = 0; ggml_block_layout(i, e, b)) v.push_back({i, e, b});
    return v;
  }();
  const BlockType* t = nullptr;
  for (const BlockType& b : table)
    if (b.type == type) t = &b;
  const std::size_t elems = t ? t->elems : 1, bytes = t ? t->bytes : 0;
  if (!t || cols % elems != 0)
    throw Error("ggml type " + ggml_type_name(type) + " of a " + std::to_string(rows) + " x " + std::to_string(cols) +
                " weight cannot be read in place");
  quant::StoredMatrix m{quant::StoredType::custom, data, rows, cols};
  m.row_bytes = cols / elems * bytes;
  m.block = elems;
  m.widen = &widen_blocks;
  m.ctx = t;
  return m;
}

}  // namespace lowp::accuracy::detail
