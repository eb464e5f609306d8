// Text widths, wrapping and collision-free label placement.
#include "report/layout.hpp"

#include <algorithm>
#include <cstddef>

namespace lowp::accuracy::report {

bool overlap(const Box& a, const Box& b) {
  return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

bool inside(const Box& inner, const Box& outer) {
  return inner.x >= outer.x && inner.y >= outer.y && inner.x + inner.w <= outer.x + outer.w &&
         inner.y + inner.h <= outer.y + outer.h;
}

double text_width(std::string_view s, double font_size) {
  // DejaVu Sans advances in em: i l j . , : ; ' | ! space about 0.28-0.35; m w M W about 0.9-1.0;
  // other capitals about 0.70-0.77; digits and other lowercase 0.56-0.64; each a little over.
  double em = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if ((c & 0xc0) == 0x80) continue;  // a UTF-8 continuation byte: counted with its lead
    if (std::string_view("ilj.,:;'|! ()[]").find(static_cast<char>(c)) != std::string_view::npos) em += 0.36;
    else if (c == 'm' || c == 'w' || c == 'M' || c == 'W') em += 1.0;
    else if (c >= 'A' && c <= 'Z') em += 0.78;
    else em += 0.64;
  }
  return em * font_size;
}

std::vector<std::string> wrap(std::string_view s, double width, double font_size) {
  std::vector<std::string> lines;
  std::string line;
  std::size_t at = 0;
  while (at < s.size()) {
    std::size_t end = s.find(' ', at);
    if (end == std::string_view::npos) end = s.size();
    const std::string_view word = s.substr(at, end - at);
    std::string tried = line;  // appended, not operator+ on temporaries: GCC 12 warns falsely there
    if (!tried.empty()) tried += ' ';
    tried.append(word);
    if (!line.empty() && text_width(tried, font_size) > width) {
      lines.push_back(line);
      line = std::string(word);
    } else {
      line = tried;
    }
    at = end + 1;
  }
  if (!line.empty() || lines.empty()) lines.push_back(line);
  return lines;
}

std::string fit(std::string_view s, double width, double font_size) {
  if (text_width(s, font_size) <= width) return std::string(s);
  std::size_t cut = s.size();
  while (cut > 0) {
    do --cut;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xc0) == 0x80);  // not inside a UTF-8 character
    std::string t(s.substr(0, cut));
    t.append("...");
    if (text_width(t, font_size) <= width) return t;
  }
  return "...";
}

std::vector<PlacedLabel> place_labels(const std::vector<double>& px, const std::vector<double>& py,
                                      const std::vector<std::string>& text, double font_size, const Box& area,
                                      std::vector<Box> obstacles) {
  // Offsets of the box's corner from the point, in units of the ring distance: right-above,
  // right-below, left-above, left-below, above, below, right, left.
  struct Spot {
    double dx, dy;
    int h, v;  // box to the right (1), left (-1) or centred (0); above (-1), below (1) or centred (0)
  };
  static constexpr Spot kSpots[] = {{1, -1, 1, -1}, {1, 1, 1, 1},  {-1, -1, -1, -1}, {-1, 1, -1, 1},
                                    {0, -1, 0, -1}, {0, 1, 0, 1},  {1, 0, 1, 0},     {-1, 0, -1, 0}};
  static constexpr double kRings[] = {5, 14, 26, 40, 58, 80, 110, 150};
  const double h = font_size * 1.15;  // the box's height: ascent plus descent
  std::vector<PlacedLabel> out(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const double w = text_width(text[i], font_size);
    for (std::size_t r = 0; r < std::size(kRings) && !out[i].placed; ++r)
      for (const Spot& s : kSpots) {
        const double d = kRings[r], cx = px[i] + s.dx * d, cy = py[i] + s.dy * d * 0.7;
        const double bx = s.h > 0 ? cx : s.h < 0 ? cx - w : cx - w / 2;
        const double by = s.v > 0 ? cy : s.v < 0 ? cy - h : cy - h / 2;
        const Box b{bx, by, w, h}, air{bx - 2, by - 1, w + 4, h + 2};  // air: labels never touch
        if (!inside(b, area) || std::any_of(obstacles.begin(), obstacles.end(), [&](const Box& o) { return overlap(air, o); }))
          continue;
        out[i] = {b, bx, by + font_size * 0.9, r > 0, true};  // baseline: the ascent below the top
        obstacles.push_back(b);
        break;
      }
  }
  return out;
}

}  // namespace lowp::accuracy::report
