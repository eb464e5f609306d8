// Read-only memory-mapped files and a bounds-checked cursor over their bytes (private to
// lowp_accuracy: loaders, tokenizers, base logits). Every read is checked against the end of the
// data; errors name the file.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "lowp/numerics/error.hpp"

namespace lowp::accuracy::detail {

using Bytes = std::span<const std::uint8_t>;

// A whole file mapped read-only (private mapping); an empty file maps to an empty span.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  Bytes bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

// The last path component, which error messages use to name a file.
std::string file_label(const std::string& path);
// A string taken from a file, for messages: in single quotes, control and non-ASCII bytes
// as \xNN, at most 64 characters (then "..."), so an error stays one readable line.
std::string show_string(std::string_view s);
// The whole file as a string (for small text files such as config.json and token lists).
std::string read_text_file(const std::string& path);

// a * b and a + b, or throw `what` (already naming the file) when they overflow 64 bits.
std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b, const std::string& what);
std::uint64_t checked_add(std::uint64_t a, std::uint64_t b, const std::string& what);

// Little-endian reads at a moving position; reading past the end throws
// "<name>: <field> [offset N, n bytes] runs past the end of the file (M bytes)".
class ByteReader {
 public:
  ByteReader(Bytes data, std::string name) : data_(data), name_(std::move(name)) {}
  const std::string& name() const { return name_; }
  std::uint64_t pos() const { return pos_; }
  std::uint64_t size() const { return data_.size(); }
  std::uint64_t remaining() const { return data_.size() - pos_; }
  Bytes data() const { return data_; }

  // Throws unless `n` more bytes are available for `field`.
  void need(std::uint64_t n, std::string_view field) const;
  Bytes take(std::uint64_t n, std::string_view field) {
    need(n, field);
    Bytes b = data_.subspan(pos_, n);
    pos_ += n;
    return b;
  }
  void seek(std::uint64_t pos, std::string_view field);
  template <class T>
  T read(std::string_view field) {
    T v;
    std::memcpy(&v, take(sizeof(T), field).data(), sizeof(T));  // x86-64: little-endian
    return v;
  }
  // A string stored as uint64 length + bytes (GGUF).
  std::string_view read_string64(std::string_view field);

  [[noreturn]] void fail(const std::string& msg) const { throw Error(name_ + ": " + msg); }

 private:
  Bytes data_;
  std::string name_;
  std::uint64_t pos_ = 0;
};

}  // namespace lowp::accuracy::detail
