// Picks a loader from what the path is: a directory (safetensors), or a file's first bytes.
#include <cstdint>
#include <cstring>
#include <filesystem>

#include "lowp/accuracy/loaders.hpp"
#include "io/mapped_file.hpp"

namespace lowp::accuracy {

LlamaModel load_model(const std::string& path, WeightStorage storage) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return load_safetensors(path, storage);
  detail::MappedFile f(path);
  const detail::Bytes b = f.bytes();
  if (b.size() >= 4 && std::memcmp(b.data(), "GGUF", 4) == 0) return load_gguf(path, storage);
  // safetensors: a uint64 header length that fits the file, then a JSON object starting with
  // '{'. (Byte 8 alone is also the low byte of a llama2.c header's n_layers.)
  if (b.size() >= 9 && b[8] == '{') {
    std::uint64_t header = 0;
    for (int i = 7; i >= 0; --i) header = header << 8 | b[static_cast<std::size_t>(i)];
    if (header <= b.size() - 8) return load_safetensors(path, storage);
  }
  return load_llama2c_bytes(b, path);
}

}  // namespace lowp::accuracy
