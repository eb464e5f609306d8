// Text helpers of the reports (private to lowp_accuracy): number spelling, escaping for
// CSV / JSON / XML, and an aligned text table.
#pragma once
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace lowp::accuracy::report {

// The shortest decimal that reads back as exactly v; "nan", "inf", "-inf".
std::string exact(double v);
// printf-style with one double argument; "nan", "inf", "-inf" for those.
std::string fixed(const char* fmt, double v);

// A CSV field: quoted (with "" for ") when it holds a comma, quote, CR or LF.
std::string csv_field(std::string_view s);
// A JSON string literal, quotes included; control bytes as \u00XX.
std::string json_string(std::string_view s);
// A JSON number (exact), or null when not finite (JSON has no NaN or Inf).
std::string json_number(double v);
// Text for XML/SVG content and attribute values: & < > " ' escaped, control bytes dropped.
std::string xml_text(std::string_view s);

// Columns padded to their widest cell, two spaces apart; `right[c]` right-aligns column c.
// The first row is the header, underlined with dashes.
void print_table(std::ostream& out, const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right);

}  // namespace lowp::accuracy::report
