// GGUF weights as GEMM operands without a float32 copy (private to the loaders): a tensor of
// ggml type `type` becomes a quant::StoredMatrix that gemm_f32 widens one K panel at a time
// with io/ggml's decoders.
#pragma once
#include <cstddef>
#include <cstdint>

#include "lowp/quant/gemm.hpp"

namespace lowp::accuracy::detail {

// Whether ggml_matrix takes tensors of this type: F32, F16, BF16 natively, and every block
// type io/ggml decodes (ggml::can_dequantize) whose block divides gemm's 256-element K blocks.
bool ggml_mappable(std::uint32_t type);

// rows x cols (cols = ne0, a whole number of blocks) of ggml type `type` at `data`, read in place.
quant::StoredMatrix ggml_matrix(std::uint32_t type, const void* data, std::size_t rows, std::size_t cols);

}  // namespace lowp::accuracy::detail
