// Picks a loader from what the path is: a directory (safetensors), or a file's first bytes.
#include <cstring>
#include <filesystem>

#include "lowp/accuracy/loaders.hpp"
#include "mapped_file.hpp"

namespace lowp::accuracy {

LlamaModel load_model(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return load_safetensors(path);
  detail::MappedFile f(path);
  const detail::Bytes b = f.bytes();
  if (b.size() >= 4 && std::memcmp(b.data(), "GGUF", 4) == 0) return load_gguf_bytes(b, path);
  // safetensors: a uint64 header length, then a JSON object starting with '{'.
  if (b.size() >= 9 && b[8] == '{') return load_safetensors(path);
  return load_llama2c_bytes(b, path);
}

}  // namespace lowp::accuracy
