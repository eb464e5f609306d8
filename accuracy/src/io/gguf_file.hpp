// GGUF v2/v3 container parsing (private): metadata key/values and tensor infos, every length
// and offset checked against the file. Used by the model loader and the SPM tokenizer.
#pragma once
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "file/mapped_file.hpp"
#include "io/gguf_meta.hpp"

namespace lowp::accuracy::detail {

enum GgufValueType : std::uint32_t {
  gguf_u8 = 0, gguf_i8 = 1, gguf_u16 = 2, gguf_i16 = 3, gguf_u32 = 4, gguf_i32 = 5, gguf_f32 = 6,
  gguf_bool = 7, gguf_string = 8, gguf_array = 9, gguf_u64 = 10, gguf_i64 = 11, gguf_f64 = 12,
};

// Whether a file's bytes start with GGUF's magic: the one test that sends a file to the GGUF
// model loader or tokenizer reader rather than another format's.
inline bool has_gguf_magic(Bytes b) { return b.size() >= 4 && std::memcmp(b.data(), "GGUF", 4) == 0; }

// "Q4_K (12)": the ggml name of a tensor type, for messages.
std::string ggml_type_name(std::uint32_t type);

struct GgufValue {
  std::uint32_t type = 0;
  std::int64_t i = 0;       // integer and bool types (u64 above 2^63 is kept in u)
  std::uint64_t u = 0;
  double f = 0;             // float types
  std::string_view s;       // string
  std::uint32_t elem_type = 0;  // arrays: element type, count and the raw element bytes
  std::uint64_t count = 0;
  Bytes raw;
  Bytes encoded;  // the whole value as stored (after its type)
};

struct GgufTensor {
  std::string name;
  std::vector<std::uint64_t> dims;  // ne0 (fastest) first
  std::uint32_t type = 0;
  std::uint64_t offset = 0;         // from the start of the data section
  std::uint64_t elements = 0;
  Bytes data;                       // empty for types whose storage is unknown (see io/ggml)
};

class GgufFile {
 public:
  GgufFile(Bytes bytes, std::string name);
  const std::string& name() const { return name_; }
  std::uint32_t version() const { return version_; }
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* tensor(std::string_view name) const;
  const GgufValue* find(std::string_view key) const;
  // The entries whose key starts with `prefix`, in file order, their values byte for byte.
  std::vector<GgufKv> entries(std::string_view prefix) const;

  // Typed metadata access; absent keys give nullopt, a key of the wrong type throws.
  std::optional<std::int64_t> get_int(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;
  std::optional<std::string> get_string(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  // Arrays of strings / of numbers (numbers of any numeric element type).
  std::optional<std::vector<std::string>> get_strings(std::string_view key) const;
  std::optional<std::vector<double>> get_numbers(std::string_view key) const;

  [[noreturn]] void fail(const std::string& msg) const { throw Error(name_ + ": " + msg); }

 private:
  std::string name_;
  std::uint32_t version_ = 0;
  std::vector<std::pair<std::string_view, GgufValue>> kv_;
  std::vector<GgufTensor> tensors_;
};

}  // namespace lowp::accuracy::detail
