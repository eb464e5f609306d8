#include "io/gguf_file.hpp"

#include "io/ggml/ggml_types.hpp"

#include <cmath>
#include <unordered_map>

namespace lowp::accuracy::detail {

namespace {

// Byte size of a fixed-size metadata value type; 0 for strings and arrays.
std::uint64_t value_size(std::uint32_t t) {
  switch (t) {
    case gguf_u8: case gguf_i8: case gguf_bool: return 1;
    case gguf_u16: case gguf_i16: return 2;
    case gguf_u32: case gguf_i32: case gguf_f32: return 4;
    case gguf_u64: case gguf_i64: case gguf_f64: return 8;
    default: return 0;
  }
}

constexpr int kMaxArrayDepth = 4;
constexpr std::uint32_t kMaxDims = 4;  // GGML_MAX_DIMS

void read_scalar(GgufValue& v, Bytes b) {
  auto get = [&](auto x) { std::memcpy(&x, b.data(), sizeof x); return x; };
  switch (v.type) {
    case gguf_u8: v.i = get(std::uint8_t{}); break;
    case gguf_i8: v.i = get(std::int8_t{}); break;
    case gguf_bool: v.i = get(std::uint8_t{}); break;
    case gguf_u16: v.i = get(std::uint16_t{}); break;
    case gguf_i16: v.i = get(std::int16_t{}); break;
    case gguf_u32: v.i = get(std::uint32_t{}); break;
    case gguf_i32: v.i = get(std::int32_t{}); break;
    case gguf_u64: v.u = get(std::uint64_t{}); v.i = static_cast<std::int64_t>(v.u); break;
    case gguf_i64: v.i = get(std::int64_t{}); break;
    case gguf_f32: v.f = get(float{}); break;
    case gguf_f64: v.f = get(double{}); break;
    default: break;
  }
  if (v.type != gguf_u64) v.u = static_cast<std::uint64_t>(v.i);
}

GgufValue read_value(ByteReader& r, std::uint32_t type, const std::string& field, int depth) {
  GgufValue v;
  v.type = type;
  if (const std::uint64_t n = value_size(type)) {
    read_scalar(v, r.take(n, field));
  } else if (type == gguf_string) {
    v.s = r.read_string64(field);
  } else if (type == gguf_array) {
    if (depth >= kMaxArrayDepth) r.fail(field + ": arrays nested deeper than " + std::to_string(kMaxArrayDepth));
    v.elem_type = r.read<std::uint32_t>(field + " element type");
    v.count = r.read<std::uint64_t>(field + " element count");
    const std::uint64_t start = r.pos();
    if (const std::uint64_t n = value_size(v.elem_type)) {
      r.take(checked_mul(v.count, n, r.name() + ": " + field + " size"), field + " elements");
    } else if (v.elem_type == gguf_string || v.elem_type == gguf_array) {
      // Each element takes at least 8 (string) or 12 (array) bytes: bound the count first.
      const std::uint64_t min = v.elem_type == gguf_string ? 8 : 12;
      if (v.count > r.remaining() / min)
        r.fail(field + " claims " + std::to_string(v.count) + " elements, more than the " +
               std::to_string(r.remaining()) + " bytes left can hold");
      for (std::uint64_t k = 0; k < v.count; ++k) read_value(r, v.elem_type, field + " element", depth + 1);
    } else {
      r.fail(field + " has unknown element type " + std::to_string(v.elem_type));
    }
    v.raw = r.data().subspan(start, r.pos() - start);
  } else {
    r.fail(field + " has unknown value type " + std::to_string(type));
  }
  return v;
}

// Bytes of a tensor's data; 0 for a type whose storage ggml does not define (refused by whoever
// asks for the tensor, named with its number).
std::uint64_t tensor_bytes(const GgufTensor& t, const std::string& file) {
  if (!ggml::known(t.type)) return 0;
  const std::size_t block = ggml::block_size(t.type);
  if (t.dims[0] % block != 0)
    throw Error(file + ": tensor " + show_string(t.name) + " is " + ggml::type_name(t.type) + " but its row length " +
                std::to_string(t.dims[0]) + " is not a multiple of the block size " + std::to_string(block));
  return checked_mul(t.elements / block, ggml::block_bytes(t.type), file + ": tensor " + show_string(t.name) + " size");
}

}  // namespace

std::string ggml_type_name(std::uint32_t type) { return ggml::type_name(type); }

GgufFile::GgufFile(Bytes bytes, std::string name) : name_(std::move(name)) {
  ByteReader r(bytes, name_);
  const Bytes magic = r.take(4, "magic");
  if (std::memcmp(magic.data(), "GGUF", 4) != 0) r.fail("not a GGUF file (magic is not 'GGUF')");
  version_ = r.read<std::uint32_t>("version");
  // v1 used 32-bit counts and lengths; v2 and v3 share the layout read here.
  if (version_ != 2 && version_ != 3)
    r.fail("GGUF version " + std::to_string(version_) + " is not supported (2 or 3)");
  const auto n_tensors = r.read<std::uint64_t>("tensor count");
  const auto n_kv = r.read<std::uint64_t>("metadata count");
  // Minimum encodings: a key/value takes >= 13 bytes, a tensor info >= 24.
  if (n_kv > r.remaining() / 13)
    r.fail("metadata count " + std::to_string(n_kv) + " is more than the file can hold");
  std::unordered_map<std::string_view, std::size_t> keys;
  for (std::uint64_t k = 0; k < n_kv; ++k) {
    const std::string field = "metadata entry " + std::to_string(k);
    const std::string_view key = r.read_string64(field + " key");
    const auto type = r.read<std::uint32_t>(field + " (" + show_string(key) + ") type");
    const std::uint64_t start = r.pos();
    GgufValue v = read_value(r, type, "metadata " + show_string(key), 0);
    v.encoded = r.data().subspan(start, r.pos() - start);
    if (!keys.emplace(key, kv_.size()).second) r.fail("metadata key " + show_string(key) + " appears twice");
    kv_.emplace_back(key, v);
  }

  std::uint64_t alignment = 32;
  if (const GgufValue* a = find("general.alignment")) {
    if (value_size(a->type) == 0 || a->type == gguf_f32 || a->type == gguf_f64 || a->i <= 0 ||
        (a->u & (a->u - 1)) != 0 || a->u > (1u << 30))
      r.fail("general.alignment must be a power-of-two integer, got " +
             (a->type == gguf_string ? "'" + std::string(a->s) + "'" : std::to_string(a->i)));
    alignment = a->u;
  }

  if (n_tensors > r.remaining() / 24)
    r.fail("tensor count " + std::to_string(n_tensors) + " is more than the file can hold");
  std::unordered_map<std::string, std::size_t> seen;
  for (std::uint64_t k = 0; k < n_tensors; ++k) {
    GgufTensor t;
    const std::string field = "tensor info " + std::to_string(k);
    t.name = std::string(r.read_string64(field + " name"));
    const std::string tf = "tensor " + show_string(t.name);
    const auto n_dims = r.read<std::uint32_t>(tf + " dimension count");
    if (n_dims == 0 || n_dims > kMaxDims)
      r.fail(tf + " has " + std::to_string(n_dims) + " dimensions (1 to 4 allowed)");
    t.elements = 1;
    for (std::uint32_t d = 0; d < n_dims; ++d) {
      const auto ne = r.read<std::uint64_t>(tf + " dimension " + std::to_string(d));
      if (ne == 0 || ne > (std::uint64_t{1} << 62))
        r.fail(tf + " dimension " + std::to_string(d) + " is " + std::to_string(ne));
      t.dims.push_back(ne);
      t.elements = checked_mul(t.elements, ne, name_ + ": " + tf + " element count");
    }
    t.type = r.read<std::uint32_t>(tf + " type");
    t.offset = r.read<std::uint64_t>(tf + " offset");
    if (t.offset % alignment != 0)
      r.fail(tf + " offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
             std::to_string(alignment));
    if (!seen.emplace(t.name, tensors_.size()).second) r.fail(tf + " appears twice");
    tensors_.push_back(std::move(t));
  }
  const std::uint64_t data_start =
      checked_add(r.pos(), alignment - 1, name_ + ": data section start") / alignment * alignment;
  for (GgufTensor& t : tensors_) {
    const std::uint64_t n = tensor_bytes(t, name_);
    if (n == 0) continue;  // a type without known storage: refused by whoever asks for the tensor
    const std::uint64_t begin = checked_add(data_start, t.offset, name_ + ": tensor " + show_string(t.name) + " offset");
    if (begin > bytes.size() || n > bytes.size() - begin)
      r.fail("tensor " + show_string(t.name) + " data [offset " + std::to_string(begin) + ", " + std::to_string(n) +
             " bytes] runs past the end of the file (" + std::to_string(bytes.size()) + " bytes)");
    t.data = bytes.subspan(begin, n);
  }
}

const GgufTensor* GgufFile::tensor(std::string_view name) const {
  for (const GgufTensor& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  for (const auto& [k, v] : kv_)
    if (k == key) return &v;
  return nullptr;
}

std::vector<GgufKv> GgufFile::entries(std::string_view prefix) const {
  std::vector<GgufKv> out;
  for (const auto& [k, v] : kv_)
    if (k.substr(0, prefix.size()) == prefix) out.push_back({std::string(k), v.type, {v.encoded.begin(), v.encoded.end()}});
  return out;
}

std::optional<std::int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (value_size(v->type) == 0 || v->type == gguf_f32 || v->type == gguf_f64 || v->type == gguf_bool)
    fail("metadata " + show_string(key) + " must be an integer");
  if (v->type == gguf_u64 && v->u > static_cast<std::uint64_t>(INT64_MAX))
    fail("metadata " + show_string(key) + " value " + std::to_string(v->u) + " is out of range");
  return v->i;
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type == gguf_f32 || v->type == gguf_f64) return v->f;
  if (value_size(v->type) != 0 && v->type != gguf_bool) return static_cast<double>(v->i);
  fail("metadata " + show_string(key) + " must be a number");
}

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != gguf_string) fail("metadata " + show_string(key) + " must be a string");
  return std::string(v->s);
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != gguf_bool) fail("metadata " + show_string(key) + " must be a bool");
  return v->i != 0;
}

std::optional<std::vector<std::string>> GgufFile::get_strings(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != gguf_array || v->elem_type != gguf_string)
    fail("metadata " + show_string(key) + " must be an array of strings");
  ByteReader r(v->raw, name_);  // already bounds-checked when parsed
  std::vector<std::string> out;
  out.reserve(v->count);
  for (std::uint64_t k = 0; k < v->count; ++k) out.emplace_back(r.read_string64(key));
  return out;
}

std::optional<std::vector<double>> GgufFile::get_numbers(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  const std::uint64_t n = v->type == gguf_array ? value_size(v->elem_type) : 0;
  if (n == 0 || v->elem_type == gguf_bool) fail("metadata " + show_string(key) + " must be an array of numbers");
  std::vector<double> out(v->count);
  for (std::uint64_t k = 0; k < v->count; ++k) {
    GgufValue e;
    e.type = v->elem_type;
    read_scalar(e, v->raw.subspan(k * n, n));
    out[k] = e.type == gguf_f32 || e.type == gguf_f64 ? e.f
             : e.type == gguf_u64                     ? static_cast<double>(e.u)
                                                      : static_cast<double>(e.i);
  }
  return out;
}

}  // namespace lowp::accuracy::detail
