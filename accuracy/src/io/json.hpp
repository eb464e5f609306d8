// A minimal JSON reader (private) for safetensors headers and config.json: strict RFC 8259
// syntax, nesting depth and text length limited, errors naming the source and byte offset.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lowp::accuracy::detail {

struct Json {
  enum class Kind { null, boolean, number, string, array, object };
  Kind kind = Kind::null;
  bool b = false;
  double num = 0;
  bool is_uint = false;     // a non-negative integer literal that fits uint64 exactly in `u`
  std::uint64_t u = 0;
  std::string str;
  std::vector<Json> items;                           // array
  std::vector<std::pair<std::string, Json>> fields;  // object, in file order

  const Json* get(std::string_view key) const;  // object member or nullptr
};

constexpr int kJsonMaxDepth = 64;
constexpr std::size_t kJsonMaxLength = std::size_t{100} << 20;  // the safetensors header limit

// Parses a whole document (surrounding whitespace allowed); throws lowp::Error
// "<name>: bad JSON at byte N: <why>". Duplicate object keys are an error.
Json parse_json(std::string_view text, const std::string& name);

}  // namespace lowp::accuracy::detail
