// Text helpers of the reports: numbers, escaping, tables.
#include "report/text.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ostream>

namespace lowp::accuracy::report {
namespace {

const char* special(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return nullptr;
}

}  // namespace

std::string exact(double v) {
  if (const char* s = special(v)) return s;
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string fixed(const char* fmt, double v) {
  if (const char* s = special(v)) return s;
  char buf[64];
  const int n = std::snprintf(buf, sizeof buf, fmt, v);
  return std::string(buf, static_cast<std::size_t>(std::clamp(n, 0, static_cast<int>(sizeof buf) - 1)));
}

std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
  std::string r = "\"";
  for (char c : s) {
    if (c == '"') r += '"';
    r += c;
  }
  return r + "\"";
}

std::string json_string(std::string_view s) {
  std::string r = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      r += '\\';
      r += c;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      r += buf;
    } else {
      r += c;
    }
  }
  return r + "\"";
}

std::string json_number(double v) { return std::isfinite(v) ? exact(v) : "null"; }

std::string xml_text(std::string_view s) {
  std::string r;
  for (char c : s) {
    switch (c) {
      case '&': r += "&amp;"; break;
      case '<': r += "&lt;"; break;
      case '>': r += "&gt;"; break;
      case '"': r += "&quot;"; break;
      case '\'': r += "&apos;"; break;
      default:
        // XML 1.0 allows no control characters but tab, LF and CR.
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t' || c == '\n' || c == '\r') r += c;
    }
  }
  return r;
}

void print_table(std::ostream& out, const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right) {
  if (rows.empty()) return;
  std::vector<std::size_t> width(rows[0].size(), 0);
  for (const auto& r : rows)
    for (std::size_t c = 0; c < r.size() && c < width.size(); ++c) width[c] = std::max(width[c], r[c].size());
  const auto line = [&](const std::vector<std::string>& r) {
    std::string s;
    for (std::size_t c = 0; c < r.size() && c < width.size(); ++c) {
      const std::string pad(width[c] - r[c].size(), ' ');
      if (c > 0) s += "  ";
      const bool last = c + 1 == r.size();
      s += c < right.size() && right[c] ? pad + r[c] : (last ? r[c] : r[c] + pad);
    }
    out << s << '\n';
  };
  line(rows[0]);
  std::vector<std::string> rule;
  for (std::size_t w : width) rule.emplace_back(w, '-');
  line(rule);
  for (std::size_t i = 1; i < rows.size(); ++i) line(rows[i]);
}

}  // namespace lowp::accuracy::report
