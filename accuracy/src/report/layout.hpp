// Text layout of the charts (private to lowp_accuracy): the approximate width of a label, captions
// wrapped to the canvas, and point labels placed so that none overlaps another.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace lowp::accuracy::report {

// A rectangle in SVG coordinates (y grows downwards).
struct Box {
  double x = 0, y = 0, w = 0, h = 0;
};
bool overlap(const Box& a, const Box& b);
bool inside(const Box& inner, const Box& outer);

// The advance width of `s` in a sans-serif font of `font_size` px, approximated per character
// class from DejaVu Sans' advances (the font rsvg and browsers fall back to), rounded up so that
// labels measured apart stay apart when drawn.
double text_width(std::string_view s, double font_size);

// `s` broken at spaces into lines no wider than `width` (a word wider than that stays whole).
std::vector<std::string> wrap(std::string_view s, double width, double font_size);

// `s` cut (at a UTF-8 character boundary) and ended with "..." so that it fits `width`; the whole
// `s` when it fits.
std::string fit(std::string_view s, double width, double font_size);

// A point's label placed by place_labels: its text box, where the text starts (baseline), and
// whether it sits away from the point (a leader line joins them).
struct PlacedLabel {
  Box box;
  double x = 0, y = 0;
  bool leader = false;
  bool placed = false;  // false: nowhere free; the caller numbers the point instead
};
// Labels beside anchor points, in the given order, each at the first free spot among positions
// right/left/above/below of its point at growing distances: free means inside `area` and clear of
// `obstacles` (markers) and of the labels placed before it. Deterministic: same input, same spots.
std::vector<PlacedLabel> place_labels(const std::vector<double>& px, const std::vector<double>& py,
                                      const std::vector<std::string>& text, double font_size, const Box& area,
                                      std::vector<Box> obstacles);

}  // namespace lowp::accuracy::report
