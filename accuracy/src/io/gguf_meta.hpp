// GGUF metadata entries as written (private): what save_gguf writes after the model's own keys,
// built by GgufMetaWriter or copied byte for byte from a file (GgufFile::entries).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lowp::accuracy::detail {

// One key/value: the GGUF value type and the value's encoded bytes (what follows the type).
struct GgufKv {
  std::string key;
  std::uint32_t type = 0;
  std::vector<std::uint8_t> value;
};

// Builds entries in the order they are added (little-endian, as GGUF stores them).
class GgufMetaWriter {
 public:
  void str(std::string_view key, std::string_view s);
  void u32(std::string_view key, std::uint32_t v);
  void f32(std::string_view key, float v);
  void boolean(std::string_view key, bool v);
  void strings(std::string_view key, const std::vector<std::string>& v);
  void f32s(std::string_view key, const std::vector<float>& v);
  void i32s(std::string_view key, const std::vector<std::int32_t>& v);
  std::vector<GgufKv>& entries() { return kv_; }

 private:
  GgufKv& add(std::string_view key, std::uint32_t type);
  std::vector<GgufKv> kv_;
};

// The metadata section: each entry as uint64 key length, key, uint32 type, value.
void append_gguf_kvs(std::vector<std::uint8_t>& out, const std::vector<GgufKv>& kvs);

}  // namespace lowp::accuracy::detail
