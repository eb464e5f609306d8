// Writers of the tensor sweep: table, CSV, JSON, SVG.
#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "lowp/accuracy/report.hpp"
#include "report/layout.hpp"
#include "report/svg.hpp"
#include "report/text.hpp"

namespace lowp::accuracy {
namespace {

using report::exact;
using report::fixed;

// Distinct values of a field in order of first appearance.
template <class F>
std::vector<std::string> distinct(std::span<const TensorSweepRow> rows, F field) {
  std::vector<std::string> r;
  for (const auto& row : rows)
    if (std::find(r.begin(), r.end(), field(row)) == r.end()) r.push_back(field(row));
  return r;
}

const TensorSweepRow* find(std::span<const TensorSweepRow> rows, const std::string& dist, const std::string& spec,
                           const std::string& rot) {
  for (const auto& r : rows)
    if (r.distribution == dist && r.spec == spec && r.rotation == rot) return &r;
  return nullptr;
}

std::string short_rotation(const std::string& r) {
  if (r == "hadamard") return "had";
  if (r == "block32") return "b32";
  return r;
}

}  // namespace

void write_tensor_sweep_table(std::ostream& out, std::span<const TensorSweepRow> rows, const TensorSweepOptions& opt) {
  const auto dists = distinct(rows, [](const auto& r) { return r.distribution; });
  const auto specs = distinct(rows, [](const auto& r) { return r.spec; });
  const auto rots = distinct(rows, [](const auto& r) { return r.rotation; });
  const bool any_nonfinite = std::any_of(rows.begin(), rows.end(), [](const auto& r) { return r.nonfinite > 0; });
  out << "Tensor sweep: " << opt.rows << " x " << opt.cols << " values per distribution, seed " << opt.seed
      << ".\nEach row is rotated before quantizing and rotated back after: none; had = randomized Hadamard;\n"
         "b32 = block-diagonal Hadamard (32). dB = SQNR, MSE = mean squared error, max = largest |error|,\n"
         "bits = storage bits per element, scales included.\n";
  for (const auto& d : dists) {
    std::vector<std::vector<std::string>> table;
    std::vector<std::string> header = {"spec", "bits"};
    for (const char* m : {"dB", "MSE", "max"})
      for (const auto& r : rots) header.push_back(std::string(m) + " " + short_rotation(r));
    if (any_nonfinite) header.push_back("nonfinite");
    table.push_back(header);
    for (const auto& s : specs) {
      std::vector<const TensorSweepRow*> cells;
      for (const auto& r : rots) cells.push_back(find(rows, d, s, r));
      const auto first = std::find_if(cells.begin(), cells.end(), [](auto* c) { return c != nullptr; });
      if (first == cells.end()) continue;
      std::vector<std::string> line = {s, fixed("%.3f", (*first)->bits_per_element)};
      const auto add = [&](auto value) {
        for (auto* c : cells) line.push_back(c ? value(*c) : "-");
      };
      add([](const TensorSweepRow& c) { return fixed("%.2f", c.sqnr_db); });
      add([](const TensorSweepRow& c) { return fixed("%.2e", c.mse); });
      add([](const TensorSweepRow& c) { return fixed("%.3g", c.max_abs_error); });
      if (any_nonfinite) {
        std::size_t n = 0;
        for (auto* c : cells) n += c ? c->nonfinite : 0;
        line.push_back(std::to_string(n));
      }
      table.push_back(line);
    }
    std::vector<bool> right(header.size(), true);
    right[0] = false;
    out << '\n' << d << '\n';
    report::print_table(out, table, right);
  }
}

void write_tensor_sweep_csv(std::ostream& out, std::span<const TensorSweepRow> rows) {
  out << "distribution,spec,format,granularity,scale,rotation,bits_per_element,sqnr_db,mse,max_abs_error,nonfinite\n";
  for (const auto& r : rows)
    out << report::csv_field(r.distribution) << ',' << report::csv_field(r.spec) << ',' << report::csv_field(r.format)
        << ',' << report::csv_field(r.granularity) << ',' << report::csv_field(r.scale) << ','
        << report::csv_field(r.rotation) << ',' << exact(r.bits_per_element) << ',' << exact(r.sqnr_db) << ','
        << exact(r.mse) << ',' << exact(r.max_abs_error) << ',' << r.nonfinite << '\n';
}

void write_tensor_sweep_json(std::ostream& out, std::span<const TensorSweepRow> rows, const TensorSweepOptions& opt) {
  using report::json_number;
  using report::json_string;
  out << "{\n  \"rows\": " << opt.rows << ",\n  \"cols\": " << opt.cols << ",\n  \"seed\": " << opt.seed
      << ",\n  \"results\": [";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    out << (i ? ",\n    {" : "\n    {") << "\"distribution\": " << json_string(r.distribution)
        << ", \"spec\": " << json_string(r.spec) << ", \"format\": " << json_string(r.format)
        << ", \"granularity\": " << json_string(r.granularity) << ", \"scale\": " << json_string(r.scale)
        << ", \"rotation\": " << json_string(r.rotation) << ", \"bits_per_element\": " << json_number(r.bits_per_element)
        << ", \"sqnr_db\": " << json_number(r.sqnr_db) << ", \"mse\": " << json_number(r.mse)
        << ", \"max_abs_error\": " << json_number(r.max_abs_error) << ", \"nonfinite\": " << r.nonfinite << "}";
  }
  out << (rows.empty() ? "]\n}\n" : "\n  ]\n}\n");
}

void write_tensor_sweep_svg(std::ostream& out, std::span<const TensorSweepRow> rows, const TensorSweepOptions& opt) {
  const auto dists = distinct(rows, [](const auto& r) { return r.distribution; });
  const auto specs = distinct(rows, [](const auto& r) { return r.spec; });
  const auto rots = distinct(rows, [](const auto& r) { return r.rotation; });
  const auto fill = [](std::size_t k) { return "fill=\"" + std::string(report::series_colour(k)) + "\""; };

  // The SQNR axis: 0 to the largest finite value, in round steps.
  double top = 10;
  for (const auto& r : rows)
    if (std::isfinite(r.sqnr_db)) top = std::max(top, r.sqnr_db);
  const report::LinearAxis axis = report::round_axis(0, top, 4);
  top = axis.hi;

  const double bar = 7, gap = 6, group = static_cast<double>(rots.size()) * bar + gap;
  double label_w = 60;
  for (const auto& spec : specs) label_w = std::max(label_w, report::text_width(spec, 11) + 14);
  const double panel_w = 230, panel_gap = 24, top_y = 78, x0 = 10;
  const double plot_h = static_cast<double>(specs.size()) * group;
  const double width = x0 + label_w + static_cast<double>(dists.size()) * (panel_w + panel_gap) + 10;
  const std::string caption_text =
      "SQNR = 10 log10(sum x^2 / sum (x - q(x))^2); bars at the right edge are exact (infinite SQNR)";
  const double height = top_y + plot_h + 26 + 14.3 * static_cast<double>(report::wrap(caption_text, width - 2 * x0, 11).size());
  const auto px = [&](double db) { return std::clamp(db, 0.0, top) / top * panel_w; };

  report::Svg svg(width, height, 11);
  const std::string title = "lowp sweep: SQNR (dB) per format and granularity, " + std::to_string(opt.rows) + " x " +
                            std::to_string(opt.cols) + " per distribution, seed " + std::to_string(opt.seed) + " (longer is better)";
  svg.text(x0, 18, report::fit(title, width - 2 * x0, 14 * 1.1), "font-size=\"14\" font-weight=\"bold\"");
  for (std::size_t k = 0; k < rots.size(); ++k) {  // legend
    const double lx = x0 + static_cast<double>(k) * 150;
    svg.rect(lx, 28, 12, 10, fill(k));
    svg.text(lx + 16, 37, "rotation " + rots[k]);
  }
  for (std::size_t p = 0; p < dists.size(); ++p) {
    const double left = x0 + label_w + static_cast<double>(p) * (panel_w + panel_gap);
    svg.text(left, top_y - 22, dists[p], "font-weight=\"bold\"");
    report::x_grid(svg, report::linear_ticks(axis), [&](double db) { return left + px(db); }, top_y - 4, top_y + plot_h, true);
    for (std::size_t s = 0; s < specs.size(); ++s) {
      const double gy = top_y + static_cast<double>(s) * group;
      for (std::size_t k = 0; k < rots.size(); ++k) {
        const TensorSweepRow* r = find(rows, dists[p], specs[s], rots[k]);
        if (!r) continue;
        const double y = gy + static_cast<double>(k) * bar;
        const double w = std::isnan(r->sqnr_db) ? 0 : std::isinf(r->sqnr_db) ? (r->sqnr_db > 0 ? panel_w : 0) : px(r->sqnr_db);
        svg.rect(left, y, w, bar - 1, fill(k),
                 dists[p] + ", " + specs[s] + ", rotation " + rots[k] + ": SQNR " + report::fixed("%.2f", r->sqnr_db) +
                     " dB, MSE " + report::fixed("%.3e", r->mse) + ", max error " + report::fixed("%.3g", r->max_abs_error));
      }
    }
  }
  for (std::size_t s = 0; s < specs.size(); ++s)  // spec labels, right-aligned against the first panel
    svg.text(x0 + label_w - 6, top_y + static_cast<double>(s) * group + group / 2, specs[s], "text-anchor=\"end\"");
  report::caption(svg, x0, top_y + plot_h + 22, width - 2 * x0, caption_text, 11, "fill=\"#555\"");
  out << svg.finish();
}

}  // namespace lowp::accuracy
