// Token-id files: one id per line.
#include <charconv>

#include "lowp/accuracy/tokenizer.hpp"
#include "lowp/numerics/error.hpp"
#include "file/mapped_file.hpp"

namespace lowp::accuracy {

std::vector<int> parse_token_ids(std::string_view text, int vocab_size, const std::string& name) {
  std::vector<int> ids;
  std::size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.empty()) continue;
    const std::string where = name + ":" + std::to_string(line_no) + ": ";
    int v = 0;
    const auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), v);
    if (ec != std::errc() || end != line.data() + line.size() || v < 0) {
      throw Error(where + detail::show_string(line) + " is not a token id (a non-negative integer)");
    }
    if (vocab_size > 0 && v >= vocab_size)
      throw Error(where + "token id " + std::to_string(v) + " is outside the vocabulary (" + std::to_string(vocab_size) + ")");
    ids.push_back(v);
  }
  if (ids.empty()) throw Error(name + ": no token ids");
  return ids;
}

std::vector<int> read_token_file(const std::string& path, int vocab_size) {
  return parse_token_ids(detail::read_text_file(path), vocab_size, path);
}

}  // namespace lowp::accuracy
