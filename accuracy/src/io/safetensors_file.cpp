// The safetensors writer.
#include "io/safetensors_file.hpp"

#include <bit>
#include <cstdio>
#include <cstring>
#include <set>

#include "file/atomic_file.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::accuracy::detail {
namespace {

static_assert(std::endian::native == std::endian::little, "safetensors data are little-endian");

std::size_t dtype_size(const std::string& d) {
  if (d == "U8" || d == "I8" || d == "BOOL" || d == "F8_E4M3" || d == "F8_E5M2") return 1;
  if (d == "U16" || d == "I16" || d == "F16" || d == "BF16") return 2;
  if (d == "U32" || d == "I32" || d == "F32") return 4;
  if (d == "U64" || d == "I64" || d == "F64") return 8;
  return 0;
}

// A JSON string literal: quotes, backslashes and control bytes escaped.
std::string json_string(const std::string& s) {
  std::string r = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      r += '\\';
      r += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      r += buf;
    } else {
      r += c;
    }
  }
  return r + "\"";
}

template <class T>
std::vector<std::uint8_t> raw_bytes(const std::vector<T>& v) {
  std::vector<std::uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

}  // namespace

std::vector<std::uint8_t> f32_bytes(const std::vector<float>& v) { return raw_bytes(v); }
std::vector<std::uint8_t> u16_bytes(const std::vector<std::uint16_t>& v) { return raw_bytes(v); }
std::vector<std::uint8_t> u32_bytes(const std::vector<std::uint32_t>& v) { return raw_bytes(v); }

std::vector<std::uint8_t> safetensors_file(const std::vector<SafetensorsTensor>& tensors,
                                           const std::vector<std::pair<std::string, std::string>>& metadata) {
  std::string header = "{\"__metadata__\":{";
  for (std::size_t i = 0; i < metadata.size(); ++i) {
    if (i) header += ',';
    header += json_string(metadata[i].first);
    header += ':';
    header += json_string(metadata[i].second);
  }
  header += "}";
  std::set<std::string> names;
  std::uint64_t offset = 0;
  for (const SafetensorsTensor& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__" || !names.insert(t.name).second)
      throw Error("safetensors: bad or duplicate tensor name " + json_string(t.name));
    const std::size_t size = dtype_size(t.dtype);
    if (size == 0) throw Error("safetensors: unknown dtype " + json_string(t.dtype) + " of " + t.name);
    std::uint64_t n = 1;
    for (const std::uint64_t d : t.shape) n *= d;
    if (n * size != t.bytes.size())
      throw Error("safetensors: " + t.name + " holds " + std::to_string(t.bytes.size()) + " bytes, its shape needs " +
                  std::to_string(n * size));
    header += ',';
    header += json_string(t.name);
    header += ":{\"dtype\":\"" + t.dtype + "\",\"shape\":[";
    for (std::size_t i = 0; i < t.shape.size(); ++i) {
      if (i) header += ',';
      header += std::to_string(t.shape[i]);
    }
    const std::uint64_t end = offset + t.bytes.size();
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(end) + "]}";
    offset = end;
  }
  header += "}";
  while (header.size() % 8) header += ' ';
  std::vector<std::uint8_t> out(8 + header.size());
  const std::uint64_t len = header.size();
  std::memcpy(out.data(), &len, 8);
  std::memcpy(out.data() + 8, header.data(), header.size());
  out.reserve(out.size() + offset);
  for (const SafetensorsTensor& t : tensors) out.insert(out.end(), t.bytes.begin(), t.bytes.end());
  return out;
}

void write_safetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                       const std::vector<std::pair<std::string, std::string>>& metadata) {
  write_file_atomic(path, safetensors_file(tensors, metadata));
}

}  // namespace lowp::accuracy::detail
