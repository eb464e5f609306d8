#include "io/ggml_weights.hpp"

#include <array>
#include <string>

#include "io/ggml/ggml_types.hpp"
#include "io/ggml/int_dots.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::accuracy::detail {
namespace {

// The decoder context a view points at: its type and block geometry, one entry per type id.
struct BlockType {
  std::uint32_t type = 0;
  std::size_t elems = 0, bytes = 0;  // elems 0: not mappable
  ggml::LaneDecoder lanes = nullptr;  // the one-row GEMV's 8-rows-at-once decoder, if the type has one
  ggml::LaneDot dot = nullptr;        // its 64-rows decode-and-dot, if the type has one
  ggml::InterleavedDot interleaved;   // the same over an interleaved copy, and its word
  const quant::ActProduct* act_product = nullptr;  // llama.cpp's integer product (act.ggml), if lowp has it
  std::string name;                   // "Q4_K (12)"
};
constexpr std::uint32_t max_types = 64;

const BlockType* block_type(std::uint32_t type) {
  static const std::array<BlockType, max_types> table = [] {
    std::array<BlockType, max_types> t{};
    for (std::uint32_t i = 0; i < max_types; ++i) {
      t[i].type = i;
      if (!ggml::can_dequantize(i)) continue;
      const std::size_t e = ggml::block_size(i);
      if (256 % e == 0)
        t[i] = {i, e, ggml::block_bytes(i), ggml::lane_decoder(i, best_isa()), ggml::lane_dot(i, best_isa()),
                ggml::lane_dot_interleaved(i, best_isa()), ggml::int_product(i, best_isa()), ggml::type_name(i)};
    }
    return t;
  }();
  return type < max_types && table[type].elems ? &table[type] : nullptr;
}

void widen_blocks(const void* ctx, const void* row, std::size_t k0, std::size_t n, float* out) {
  const auto& t = *static_cast<const BlockType*>(ctx);
  ggml::dequantize(t.type, static_cast<const std::uint8_t*>(row) + k0 / t.elems * t.bytes, out, n);
}

void widen_lanes(const void* ctx, const void* const* rows, std::size_t k0, std::size_t n, float* out, std::size_t ld) {
  static_cast<const BlockType*>(ctx)->lanes(rows, k0, n, out, ld);
}

static_assert(ggml::kLaneDotRows == 64, "StoredMatrix::dot_lanes continues 64 rows' chains");
void dot_lanes(const void* ctx, const void* const* rows, std::size_t k0, std::size_t n, const float* x, float* acc) {
  static_cast<const BlockType*>(ctx)->dot(rows, k0, n, x, acc);
}

static_assert(ggml::kLaneDotInterleave == quant::kByteInterleave, "InterleavedRows' groups are the dot's");
void dot_interleaved(const void* ctx, const void* const* rows, std::size_t k0, std::size_t n, const float* x,
                     float* acc) {
  static_cast<const BlockType*>(ctx)->interleaved.dot(rows, k0, n, x, acc);
}

}  // namespace

bool ggml_mappable(std::uint32_t type) {
  return type == ggml::f32 || type == ggml::f16 || type == ggml::bf16 || block_type(type) != nullptr;
}

quant::StoredMatrix ggml_matrix(std::uint32_t type, const void* data, std::size_t rows, std::size_t cols) {
  switch (type) {
    case ggml::f32: return {quant::StoredType::f32, data, rows, cols};
    case ggml::f16: return {quant::StoredType::f16, data, rows, cols};
    case ggml::bf16: return {quant::StoredType::bf16, data, rows, cols};
    default: break;
  }
  const BlockType* t = block_type(type);
  if (!t || cols % t->elems != 0)
    throw Error("ggml type " + ggml::type_name(type) + " of a " + std::to_string(rows) + " x " + std::to_string(cols) +
                " weight cannot be read in place");
  quant::StoredMatrix m{quant::StoredType::custom, data, rows, cols};
  m.row_bytes = cols / t->elems * t->bytes;
  m.block = t->elems;
  m.block_bytes = t->bytes;
  m.widen = &widen_blocks;
  m.ctx = t;
  if (t->lanes && cols % 32 == 0) m.widen_lanes = &widen_lanes;
  if (t->dot && cols % 32 == 0) m.dot_lanes = &dot_lanes;
  if (t->interleaved.dot && cols % 32 == 0) m.dot_interleaved = &dot_interleaved;
  m.interleave_word = t->interleaved.word;
  m.name = t->name.c_str();
  m.act_product = t->act_product;
  // Blocks of 32 with their own scale (Q4_0, Q8_0) have no 256-element header to re-read: 32
  // columns a call was 4-11 % faster for Q8_0's step on Zen 5 (Q4_K and Q6_K 30 % slower).
  if (t->elems == 32) m.dot_columns = 32;
  return m;
}

}  // namespace lowp::accuracy::detail
