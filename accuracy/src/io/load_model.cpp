// Picks a loader from what the path is: a directory (safetensors), or a file's first bytes.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <vector>

#include "lowp/accuracy/loaders.hpp"
#include "io/mapped_file.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::accuracy {

std::string resolve_model_path(const std::string& name_or_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (name_or_path != "shakespeare" || fs::exists(name_or_path, ec)) return name_or_path;
  // Beside the installed program (<prefix>/bin/lowp -> <prefix>/share/lowp/models), the
  // configured install prefix, then the source tree's copy (a build that was not installed).
  std::vector<fs::path> dirs;
  if (const fs::path exe = fs::read_symlink("/proc/self/exe", ec); !ec)
    dirs.push_back(exe.parent_path().parent_path() / "share" / "lowp" / "models");
  dirs.emplace_back(LOWP_MODELS_INSTALL_DIR);
  dirs.emplace_back(LOWP_MODELS_SOURCE_DIR);
  for (const fs::path& dir : dirs) {
    const fs::path p = dir / "shakespeare" / "model.bin";
    if (fs::exists(p, ec)) return p.string();
  }
  throw Error("built-in model 'shakespeare' is missing (looked in <prefix>/share/lowp/models, " LOWP_MODELS_INSTALL_DIR
              " and " LOWP_MODELS_SOURCE_DIR ")");
}

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
