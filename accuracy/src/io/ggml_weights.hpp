// GGUF weights as GEMM operands without a float32 copy (private to the loaders): a tensor of
// ggml type `type` becomes a quant::StoredMatrix that gemm_f32 widens one K block at a time.
#pragma once
#include <cstddef>
#include <cstdint>

#include "lowp/quant/gemm.hpp"

namespace lowp::accuracy::detail {

// Whether ggml_matrix takes tensors of this type (F32, F16, BF16 natively; block types that
// ggml_block_layout knows).
bool ggml_mappable(std::uint32_t type);

// rows x cols (cols = ne0, a whole number of blocks) of ggml type `type` at `data`, read in place.
quant::StoredMatrix ggml_matrix(std::uint32_t type, const void* data, std::size_t rows, std::size_t cols);

// THE hook for GGUF block types: elements per block and bytes per block of a block type
// (false: not decodable in place), and the decoder of n elements (whole blocks) from `blocks`.
// Q8_0 is decoded here; the full set of ggml decoders plugs in at these two functions.
bool ggml_block_layout(std::uint32_t type, std::size_t& block_elems, std::size_t& block_bytes);
void ggml_dequantize(std::uint32_t type, const void* blocks, float* out, std::size_t n);

}  // namespace lowp::accuracy::detail
