// Picks a loader from what the path is: a directory (safetensors), or a file's first bytes.
// A file none of the formats recognises is refused before any loader reads it.
#include <cstdint>
#include <filesystem>
#include <vector>

#include "lowp/accuracy/loaders.hpp"
#include "file/mapped_file.hpp"
#include "io/gguf_file.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::accuracy {
namespace {

constexpr const char* not_a_checkpoint = ": not a checkpoint lowp reads (llama2.c .bin, GGUF, safetensors)";

std::int64_t le(const detail::Bytes& b, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | b[at + static_cast<std::size_t>(i)];
  return bytes == 4 ? static_cast<std::int32_t>(v) : static_cast<std::int64_t>(v);
}

// A llama2.c legacy header: seven int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads,
// vocab_size (negative: separate classifier), seq_len), consistent with each other and with
// the file's length (the tensors, then the legacy RoPE tables).
struct Llama2cGuess {
  bool sane = false;      // positive, consistent dimensions
  bool size_ok = false;   // ... and the file has exactly the bytes they imply
  std::string summary;    // "dim 64, ..., implies N bytes, the file has M"
};

Llama2cGuess guess_llama2c(const detail::Bytes& b) {
  Llama2cGuess g;
  if (b.size() < 28) return g;
  std::int64_t h[7];
  for (int i = 0; i < 7; ++i) h[i] = le(b, 4 * static_cast<std::size_t>(i), 4);
  const std::int64_t dim = h[0], hidden = h[1], layers = h[2], heads = h[3], kvh = h[4], seq = h[6];
  const std::int64_t vocab = h[5] < 0 ? -h[5] : h[5];
  for (std::int64_t v : {dim, hidden, layers, heads, kvh, vocab, seq})
    if (v <= 0) return g;
  if (dim % heads || heads % kvh || (dim / heads) % 2) return g;
  g.sane = true;
  // In double: a hostile header may imply more than 2^64 bytes; equality needs only < 2^53.
  const double d = static_cast<double>(dim), hd = d / static_cast<double>(heads), kv = hd * static_cast<double>(kvh);
  const double per_layer = 2 * d + 2 * d * d + 2 * d * kv + 3 * d * static_cast<double>(hidden);
  double floats = static_cast<double>(vocab) * d * (h[5] > 0 ? 1 : 2) + static_cast<double>(layers) * per_layer + d +
                  static_cast<double>(seq) * hd;
  const double want = 28 + 4 * floats;
  g.size_ok = want == static_cast<double>(b.size());
  g.summary = "dim " + std::to_string(dim) + ", n_layers " + std::to_string(layers) + ", vocab_size " +
              std::to_string(h[5]) + ", ... imply " + (want < 0x1p63 ? std::to_string(static_cast<std::uint64_t>(want))
                                                                       : std::string("more than 2^63")) +
              " bytes, the file has " + std::to_string(b.size());
  return g;
}

}  // namespace

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
  if (detail::has_gguf_magic(b)) return load_gguf(path, storage);
  // safetensors: a uint64 header length that fits the file, then a JSON object starting with
  // '{'. (Byte 8 alone is also the low byte of a llama2.c header's n_layers.)
  if (b.size() >= 9 && b[8] == '{') {
    const auto header = static_cast<std::uint64_t>(le(b, 0, 8));
    if (header <= b.size() - 8) return load_safetensors(path, storage);
  }
  // llama2.c's int8 export (version 2) starts with the magic 0x616b3432 ("ak42", little-endian).
  if (b.size() >= 4 && le(b, 0, 4) == 0x616b3432) return load_llama2c_bytes(b, path);
  const Llama2cGuess g = guess_llama2c(b);
  if (g.size_ok) return load_llama2c_bytes(b, path);
  if (g.sane) throw Error(path + not_a_checkpoint + "; it looks like a llama2.c .bin, but its header (" + g.summary + ")");
  if (b.size() >= 9 && b[8] == '{')
    throw Error(path + not_a_checkpoint + "; it looks like safetensors, but its header length " +
                std::to_string(static_cast<std::uint64_t>(le(b, 0, 8))) + " runs past the end of the file (" +
                std::to_string(b.size()) + " bytes)");
  throw Error(path + not_a_checkpoint + " (" + std::to_string(b.size()) + " bytes, none of their headers)");
}

}  // namespace lowp::accuracy
