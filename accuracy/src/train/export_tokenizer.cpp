// The tokenizer that goes with a run's exports.
#include "train/export_tokenizer.hpp"

#include <cstdio>
#include <filesystem>

#include "file/atomic_file.hpp"
#include "file/mapped_file.hpp"
#include "io/gguf_file.hpp"
#include "tokenizer/gguf_vocab.hpp"

namespace lowp::accuracy::train {
namespace {

namespace fs = std::filesystem;

std::vector<std::uint8_t> file_bytes(const std::string& path) {
  detail::MappedFile f(path);
  const detail::Bytes b = f.bytes();
  return {b.begin(), b.end()};
}

// A GGUF byte vocabulary (lowp's own exports): model.bin and the HF folder of that vocabulary
// size are read as bytes already, so no tokenizer.bin goes beside them.
bool bytes_by_size(const Tokenizer& t, int vocab_size) {
  if (!Tokenizer::bytes_fit(vocab_size) || t.add_bos()) return false;
  for (int b = 0; b < 256; ++b) {
    char want[8];
    std::snprintf(want, sizeof want, "<0x%02X>", b);
    if (t.type(b) != Tokenizer::TokenType::byte || t.piece(b) != want) return false;
  }
  return true;
}

}  // namespace

TokenizerExport tokenizer_export(const std::string& init, const Tokenizer& t, int vocab_size) {
  TokenizerExport e;
  if (init.empty()) {
    e.gguf = detail::gguf_vocab(t, vocab_size);
    return e;
  }
  std::error_code ec;
  if (!fs::is_directory(init, ec)) {
    detail::MappedFile f(init);  // mapped: a large checkpoint is not read for its metadata
    const detail::Bytes bytes = f.bytes();
    if (detail::has_gguf_magic(bytes)) {
      const detail::GgufFile g(bytes, init);
      e.gguf = g.entries("tokenizer.");
      if (bytes_by_size(t, vocab_size)) return e;
      try {
        e.files = detail::tokenizer_files(t);
      } catch (const Error& why) {
        e.notes.push_back(std::string("no tokenizer file written (model.bin and model.safetensors have no tokenizer): ") +
                          why.what());
      }
      return e;
    }
  }
  const fs::path dir = fs::is_directory(init, ec) ? fs::path(init) : fs::path(init).parent_path();
  for (const char* name :
       {"tokenizer.bin", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.model"})
    if (fs::is_regular_file(dir / name, ec)) e.files.emplace_back(name, file_bytes((dir / name).string()));
  try {
    e.gguf = detail::gguf_vocab(t, vocab_size);
  } catch (const Error& why) {
    e.notes.push_back(std::string("model.gguf carries no tokenizer: ") + why.what());
  }
  return e;
}

void write_tokenizer_files(const TokenizerExport& e, const std::string& dir) {
  for (const auto& [name, bytes] : e.files) detail::write_file_atomic((fs::path(dir) / name).string(), bytes);
}

}  // namespace lowp::accuracy::train
