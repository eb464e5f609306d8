// A minimal JSON reader (private) for safetensors headers and config.json: strict RFC 8259
// syntax, nesting depth and text length limited, errors naming the source and byte offset.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lowp::accuracy::detail {

struct JsonMember;

struct Json {
  enum class Kind { null, boolean, number, string, array, object };
  Kind kind = Kind::null;
  bool b = false;
  double num = 0;
  bool is_uint = false;     // a non-negative integer literal that fits uint64 exactly in `u`
  std::uint64_t u = 0;
  std::string str;
  std::vector<Json> items;                           // array
  // Object members in file order. (Not std::pair<std::string, Json>: a pair needs Json
  // complete, which clang with libstdc++ 12 enforces.)
  std::vector<JsonMember> fields;

  const Json* get(std::string_view key) const;  // object member or nullptr
};

struct JsonMember {
  std::string key;
  Json value;
};

constexpr int kJsonMaxDepth = 64;
constexpr std::size_t kJsonMaxLength = std::size_t{100} << 20;  // the safetensors header limit

// Parses a whole document (surrounding whitespace allowed); throws lowp::Error
// "<name>: bad JSON at byte N: <why>". Duplicate object keys are an error.
Json parse_json(std::string_view text, const std::string& name);

}  // namespace lowp::accuracy::detail
