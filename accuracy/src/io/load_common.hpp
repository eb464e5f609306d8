// Pieces shared by the GGUF and safetensors loaders (private): float32 conversion of stored
// tensors and range-checked integer hyperparameters.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/mapped_file.hpp"

namespace lowp::accuracy::detail {

enum class StoredType { f32, f16, bf16, q8_0 };

// Decodes `count` elements of `type` from `data` (whose size the caller has checked).
std::vector<float> to_f32(StoredType type, Bytes data, std::uint64_t count);

// A hyperparameter that must lie in [1, 2^31): `file: <key> is <v>, must be ...` otherwise.
int positive_int(std::int64_t v, const std::string& key, const std::string& file);

}  // namespace lowp::accuracy::detail
