// Writing a safetensors file (private): an 8-byte little-endian header length, the JSON header
// (tensor name -> dtype, shape, data_offsets; "__metadata__" -> string pairs) padded with
// spaces to a multiple of 8, then the tensors' raw little-endian bytes in the order given.
// The one writer behind save_safetensors (checkpoints) and `lowp golden`.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace lowp::accuracy::detail {

struct SafetensorsTensor {
  std::string name;
  std::string dtype;                  // "F32", "U8", "U16", "U32", "I8", ...
  std::vector<std::uint64_t> shape;   // {} for a scalar
  std::vector<std::uint8_t> bytes;    // product(shape) * dtype size, little-endian
};

// Raw bytes of float32 or unsigned values, little-endian (this host's order, checked).
std::vector<std::uint8_t> f32_bytes(const std::vector<float>& v);
std::vector<std::uint8_t> u16_bytes(const std::vector<std::uint16_t>& v);
std::vector<std::uint8_t> u32_bytes(const std::vector<std::uint32_t>& v);

// The whole file. Throws lowp::Error on a duplicate or empty name, an unknown dtype or a byte
// count that does not match the shape.
std::vector<std::uint8_t> safetensors_file(const std::vector<SafetensorsTensor>& tensors,
                                           const std::vector<std::pair<std::string, std::string>>& metadata);
// The same, written atomically (write_file_atomic).
void write_safetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                       const std::vector<std::pair<std::string, std::string>>& metadata);

}  // namespace lowp::accuracy::detail
