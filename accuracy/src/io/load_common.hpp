// Pieces shared by the GGUF and safetensors loaders (private): float32 conversion of stored
// tensors and range-checked integer hyperparameters.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "file/mapped_file.hpp"

namespace lowp::accuracy::detail {

enum class StoredType { f32, f16, bf16 };

// Decodes `count` elements of `type` from `data` (whose size the caller has checked).
std::vector<float> to_f32(StoredType type, Bytes data, std::uint64_t count);

// HF's rotate-half q/k layout back to interleaved pairs: row j of a head holds interleaved row
// 2j (j < hd/2) or 2(j - hd/2) + 1. `w` is (heads * hd) x cols (cols 1 for a bias).
std::vector<float> unpermute(const std::vector<float>& w, int heads, int hd, int cols);

// The same as a row order for a mapped weight (quant::StoredMatrix::row_map): interleaved row
// h hd + 2j (or 2j + 1) is stored row h hd + j (+ hd/2).
std::vector<std::uint32_t> hf_row_map(int heads, int hd);

// A hyperparameter that must lie in [1, 2^31): `file: <key> is <v>, must be ...` otherwise.
int positive_int(std::int64_t v, const std::string& key, const std::string& file);

}  // namespace lowp::accuracy::detail
