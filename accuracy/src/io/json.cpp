#include "io/json.hpp"

#include <cstdlib>
#include <unordered_set>

#include "lowp/numerics/error.hpp"
#include "file/mapped_file.hpp"

namespace lowp::accuracy::detail {

const Json* Json::get(std::string_view key) const {
  for (const auto& [k, v] : fields)
    if (k == key) return &v;
  return nullptr;
}

namespace {

class Parser {
 public:
  Parser(std::string_view t, const std::string& name) : t_(t), name_(name) {}

  Json document() {
    if (t_.size() > kJsonMaxLength) fail("text longer than " + std::to_string(kJsonMaxLength) + " bytes");
    Json v = value(0);
    skip_ws();
    if (p_ != t_.size()) fail("trailing characters after the value");
    return v;
  }

 private:
  std::string_view t_;
  const std::string& name_;
  std::size_t p_ = 0;

  [[noreturn]] void fail(const std::string& why) const {
    throw Error(name_ + ": bad JSON at byte " + std::to_string(p_) + ": " + why);
  }
  bool at_end() const { return p_ >= t_.size(); }
  char peek() const { return at_end() ? '\0' : t_[p_]; }
  void skip_ws() {
    while (!at_end() && (t_[p_] == ' ' || t_[p_] == '\t' || t_[p_] == '\n' || t_[p_] == '\r')) ++p_;
  }
  void expect(char c) {
    if (peek() != c || at_end()) fail(std::string("expected '") + c + "'");
    ++p_;
  }
  void literal(std::string_view word) {
    if (t_.substr(p_, word.size()) != word) fail("unexpected character");
    p_ += word.size();
  }

  Json value(int depth) {
    if (depth >= kJsonMaxDepth) fail("nested deeper than " + std::to_string(kJsonMaxDepth));
    skip_ws();
    Json v;
    if (at_end()) fail("unexpected end of text");
    const char c = t_[p_];
    if (c == '{') {
      v.kind = Json::Kind::object;
      ++p_;
      skip_ws();
      if (peek() == '}' && !at_end()) { ++p_; return v; }
      while (true) {
        skip_ws();
        if (peek() != '"' || at_end()) fail("expected a string key");
        std::string key = string();
        skip_ws();
        expect(':');
        v.fields.push_back({std::move(key), value(depth + 1)});
        skip_ws();
        if (peek() == ',' && !at_end()) { ++p_; continue; }
        expect('}');
        check_unique_keys(v);
        return v;
      }
    }
    if (c == '[') {
      v.kind = Json::Kind::array;
      ++p_;
      skip_ws();
      if (peek() == ']' && !at_end()) { ++p_; return v; }
      while (true) {
        v.items.push_back(value(depth + 1));
        skip_ws();
        if (peek() == ',' && !at_end()) { ++p_; continue; }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.kind = Json::Kind::string;
      v.str = string();
      return v;
    }
    if (c == 't') { literal("true"); v.kind = Json::Kind::boolean; v.b = true; return v; }
    if (c == 'f') { literal("false"); v.kind = Json::Kind::boolean; return v; }
    if (c == 'n') { literal("null"); return v; }
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    fail(std::string("unexpected character '") + (c >= 32 && c < 127 ? std::string(1, c) : "?") + "'");
  }

  unsigned hex4() {
    if (t_.size() - p_ < 4) fail("truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = t_[p_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= c - '0';
      else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
      else fail("bad hex digit in \\u escape");
    }
    return v;
  }

  static void put_utf8(std::string& s, unsigned cp) {
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xE0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      s += static_cast<char>(0xF0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // Keys are checked once the object is complete (its fields no longer move), so a 100k-entry
  // vocabulary object costs one hash set of views rather than a copy of every key.
  void check_unique_keys(const Json& v) {
    const auto& f = v.fields;
    auto dup = [&](const std::string& k) { fail("duplicate key " + show_string(k)); };
    if (f.size() <= 16) {
      for (std::size_t i = 1; i < f.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
          if (f[i].key == f[j].key) dup(f[i].key);
      return;
    }
    std::unordered_set<std::string_view> keys;
    keys.reserve(f.size());
    for (const auto& [k, x] : f)
      if (!keys.insert(k).second) dup(k);
  }

  std::string string() {
    ++p_;  // opening quote
    std::string s;
    while (true) {
      if (at_end()) fail("unterminated string");
      // Copy the run up to the next quote, backslash or control character at once.
      std::size_t run = p_;
      while (run < t_.size() && t_[run] != '"' && t_[run] != '\\' && static_cast<unsigned char>(t_[run]) >= 0x20) ++run;
      if (run > p_) {
        s.append(t_.data() + p_, run - p_);
        p_ = run;
        continue;
      }
      const char c = t_[p_++];
      if (c == '"') return s;
      if (static_cast<unsigned char>(c) < 0x20) {
        --p_;
        fail("control character in string");
      }
      if (c != '\\') { s += c; continue; }
      if (at_end()) fail("unterminated escape");
      const char e = t_[p_++];
      switch (e) {
        case '"': s += '"'; break;
        case '\\': s += '\\'; break;
        case '/': s += '/'; break;
        case 'b': s += '\b'; break;
        case 'f': s += '\f'; break;
        case 'n': s += '\n'; break;
        case 'r': s += '\r'; break;
        case 't': s += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {  // a high surrogate must be followed by a low one
            if (t_.substr(p_, 2) != "\\u") fail("unpaired surrogate in \\u escape");
            p_ += 2;
            const unsigned lo = hex4();
            if (lo < 0xDC00 || lo >= 0xE000) fail("unpaired surrogate in \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            fail("unpaired surrogate in \\u escape");
          }
          put_utf8(s, cp);
          break;
        }
        default: --p_; fail("bad escape character");
      }
    }
  }

  Json number() {
    const std::size_t start = p_;
    auto digits = [&] {
      const std::size_t d = p_;
      while (!at_end() && t_[p_] >= '0' && t_[p_] <= '9') ++p_;
      return p_ - d;
    };
    bool integer = true;
    if (peek() == '-') ++p_;
    const std::size_t int_start = p_;
    const std::size_t n_int = digits();
    if (n_int == 0) fail("bad number");
    if (n_int > 1 && t_[int_start] == '0') fail("leading zero in number");
    if (peek() == '.' && !at_end()) {
      ++p_;
      integer = false;
      if (digits() == 0) fail("bad number: no digits after '.'");
    }
    if ((peek() == 'e' || peek() == 'E') && !at_end()) {
      ++p_;
      integer = false;
      if (peek() == '+' || peek() == '-') ++p_;
      if (digits() == 0) fail("bad number: no exponent digits");
    }
    Json v;
    v.kind = Json::Kind::number;
    const std::string text(t_.substr(start, p_ - start));
    v.num = std::strtod(text.c_str(), nullptr);
    // Offsets and shapes need exact integers beyond 2^53: accumulate them separately.
    if (integer && t_[start] != '-') {
      std::uint64_t u = 0;
      bool ok = true;
      for (char c : text) ok = ok && !__builtin_mul_overflow(u, 10, &u) && !__builtin_add_overflow(u, c - '0', &u);
      v.is_uint = ok;
      v.u = ok ? u : 0;
    }
    return v;
  }
};

}  // namespace

Json parse_json(std::string_view text, const std::string& name) { return Parser(text, name).document(); }

}  // namespace lowp::accuracy::detail
