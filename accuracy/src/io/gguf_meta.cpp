// GGUF metadata entries: encoding.
#include "io/gguf_meta.hpp"

#include <cstring>

#include "io/gguf_file.hpp"

namespace lowp::accuracy::detail {
namespace {

template <class T>
void put(std::vector<std::uint8_t>& b, T v) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
  b.insert(b.end(), p, p + sizeof(T));
}

void put_str(std::vector<std::uint8_t>& b, std::string_view s) {
  put<std::uint64_t>(b, s.size());
  b.insert(b.end(), s.begin(), s.end());
}

template <class T>
void put_array(std::vector<std::uint8_t>& b, std::uint32_t elem, const std::vector<T>& v) {
  put<std::uint32_t>(b, elem);
  put<std::uint64_t>(b, v.size());
  for (const T& x : v) put<T>(b, x);
}

}  // namespace

GgufKv& GgufMetaWriter::add(std::string_view key, std::uint32_t type) {
  kv_.push_back({std::string(key), type, {}});
  return kv_.back();
}

void GgufMetaWriter::str(std::string_view key, std::string_view s) { put_str(add(key, gguf_string).value, s); }
void GgufMetaWriter::u32(std::string_view key, std::uint32_t v) { put(add(key, gguf_u32).value, v); }
void GgufMetaWriter::f32(std::string_view key, float v) { put(add(key, gguf_f32).value, v); }
void GgufMetaWriter::boolean(std::string_view key, bool v) { put<std::uint8_t>(add(key, gguf_bool).value, v ? 1 : 0); }

void GgufMetaWriter::strings(std::string_view key, const std::vector<std::string>& v) {
  auto& b = add(key, gguf_array).value;
  put<std::uint32_t>(b, gguf_string);
  put<std::uint64_t>(b, v.size());
  for (const std::string& s : v) put_str(b, s);
}

void GgufMetaWriter::f32s(std::string_view key, const std::vector<float>& v) { put_array(add(key, gguf_array).value, gguf_f32, v); }
void GgufMetaWriter::i32s(std::string_view key, const std::vector<std::int32_t>& v) {
  put_array(add(key, gguf_array).value, gguf_i32, v);
}

void append_gguf_kvs(std::vector<std::uint8_t>& out, const std::vector<GgufKv>& kvs) {
  for (const GgufKv& kv : kvs) {
    put_str(out, kv.key);
    put<std::uint32_t>(out, kv.type);
    out.insert(out.end(), kv.value.begin(), kv.value.end());
  }
}

}  // namespace lowp::accuracy::detail
