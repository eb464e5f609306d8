// write_probe(): probe.csv, probe.json and probe.svg.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "file/atomic_file.hpp"
#include "lowp/numerics/error.hpp"
#include "model/tensors.hpp"
#include "report/layout.hpp"
#include "report/svg.hpp"
#include "train/probe/probe.hpp"

namespace lowp::accuracy::train::probe {
namespace {

namespace fs = std::filesystem;
const double kSqrt3 = std::sqrt(3.0);

std::string num(double v) {
  if (!std::isfinite(v)) return "";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string json_num(double v) { return std::isfinite(v) ? num(v) : "null"; }

std::string csv(const std::vector<Row>& rows) {
  std::ostringstream s;
  s << "recipe,step,layer,tensor,gemm,rel_mse,rel_mse_lo,rel_mse_hi,bias2,bias2_lo,bias2_hi,variance,cosine,proj,"
       "noise_ratio,loss_delta,saturated,flushed,scale_log2_sd\n";
  for (const Row& r : rows)
    s << r.recipe << ',' << r.step << ',' << r.layer << ',' << r.tensor << ',' << r.gemm << ',' << num(r.rel_mse.mean) << ','
      << num(r.rel_mse.lo) << ',' << num(r.rel_mse.hi) << ',' << num(r.bias2.mean) << ',' << num(r.bias2.lo) << ','
      << num(r.bias2.hi) << ',' << num(r.variance) << ',' << num(r.cosine) << ',' << num(r.proj) << ','
      << num(r.noise_ratio) << ',' << num(r.loss_delta) << ',' << num(r.saturated) << ',' << num(r.flushed) << ','
      << num(r.scale_log2_sd) << '\n';
  return s.str();
}

std::string json(const std::vector<Row>& rows, const Options& o) {
  std::ostringstream s;
  s << "{\n  \"steps\": [";
  for (std::size_t i = 0; i < o.at.size(); ++i) s << (i ? ", " : "") << o.at[i];
  s << "],\n  \"batches\": " << o.batches << ",\n  \"draws\": " << o.draws << ",\n  \"batch\": " << o.batch
    << ",\n  \"seed\": " << o.seed << ",\n  \"gemm_row_stride\": " << kGemmRowStride
    << ",\n  \"noise_ratio_threshold\": " << num(kSqrt3) << ",\n  \"rows\": [\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    s << "    {\"recipe\": \"" << r.recipe << "\", \"step\": " << r.step << ", \"layer\": " << r.layer << ", \"tensor\": \""
      << r.tensor << "\", \"gemm\": \"" << r.gemm << "\", \"rel_mse\": [" << json_num(r.rel_mse.mean) << ", "
      << json_num(r.rel_mse.lo) << ", " << json_num(r.rel_mse.hi) << "], \"bias2\": [" << json_num(r.bias2.mean) << ", "
      << json_num(r.bias2.lo) << ", " << json_num(r.bias2.hi) << "], \"variance\": " << json_num(r.variance)
      << ", \"cosine\": " << json_num(r.cosine) << ", \"proj\": " << json_num(r.proj) << ", \"noise_ratio\": "
      << json_num(r.noise_ratio) << ", \"below_sqrt3\": " << (r.noise_ratio < kSqrt3 ? "true" : "false")
      << ", \"loss_delta\": " << json_num(r.loss_delta) << ", \"saturated\": " << json_num(r.saturated)
      << ", \"flushed\": " << json_num(r.flushed) << ", \"scale_log2_sd\": " << json_num(r.scale_log2_sd) << "}"
      << (i + 1 < rows.size() ? ",\n" : "\n");
  }
  s << "  ]\n}\n";
  return s.str();
}

// Per recipe at the last stop: one bar per GEMM kind on a log axis, dark up to bias2 and light up
// to bias2 + variance; then a heatmap of each linear's GEMMs' rel_mse per layer.
std::string chart(const std::vector<Row>& rows, const Options& o) {
  const int step = o.at.back();
  std::vector<std::string> recipes;
  std::map<std::pair<std::string, std::string>, const Row*> model;                  // (recipe, gemm)
  std::map<std::tuple<std::string, int, std::string, std::string>, const Row*> cell;  // recipe, layer, linear, gemm
  std::set<int> layers;
  double lo = INFINITY, hi = 0;
  for (const Row& r : rows) {
    if (r.step != step) continue;
    if (std::find(recipes.begin(), recipes.end(), r.recipe) == recipes.end()) recipes.push_back(r.recipe);
    if (r.gemm == "grad") {
      if (r.tensor == "model") model[{r.recipe, "grad"}] = &r;
      continue;
    }
    if (r.tensor == "model") {
      model[{r.recipe, r.gemm}] = &r;
    } else {
      cell[{r.recipe, r.layer, r.tensor, r.gemm}] = &r;
      layers.insert(r.layer);
    }
    if (r.rel_mse.mean > 0) lo = std::min(lo, r.rel_mse.mean), hi = std::max(hi, r.rel_mse.mean);
  }
  const auto [d0, d1] = report::decades(lo, hi, {-8, 0});
  std::vector<std::string> linears;  // the table's names, in LinearKind order
  for (std::size_t k = 0; k < linear_kind_count; ++k)
    linears.push_back(accuracy::detail::linear_tensor(static_cast<LinearKind>(k)).lowp);
  const std::vector<std::string> gemms = {"fwd", "dgrad", "wgrad"};
  // The heatmap (report::draw_heatmap): a panel per recipe, under each other; a row per layer, a
  // column per linear.gemm grouped by linear.
  report::Heatmap m;
  m.panels = recipes;
  for (int layer : layers) m.rows.push_back(layer < 0 ? std::string("classifier") : "layer " + std::to_string(layer));
  for (const auto& l : linears)
    for (const auto& g : gemms) m.cols.push_back(l + " " + g);
  m.cell_w = 13;
  m.cell_h = 12;
  m.col_group = 3;
  m.col_angle = -90;  // upright: 13 px apart, the names clear each other
  m.stacked = true;
  m.key_title = "rel_mse of each linear's GEMM (log scale)";
  m.key_lo = d0;
  m.key_hi = d1;
  m.key_note = "Hover a cell for its number; no cell: not quantized.";
  m.cells.resize(recipes.size() * m.rows.size() * m.cols.size());
  for (std::size_t i = 0; i < recipes.size(); ++i) {
    std::size_t row = 0;
    for (int layer : layers) {
      for (std::size_t li = 0; li < linears.size(); ++li)
        for (std::size_t g = 0; g < 3; ++g) {
          const auto it = cell.find({recipes[i], layer, linears[li], gemms[g]});
          if (it == cell.end() || !(it->second->rel_mse.mean > 0)) continue;
          const double v = it->second->rel_mse.mean;
          m.cells[(i * m.rows.size() + row) * m.cols.size() + li * 3 + g] = {
              report::log_ramp_colour(v, d0, d1),
              recipes[i] + " layer " + std::to_string(layer) + " " + linears[li] + " " + gemms[g] + ": rel_mse " + num(v)};
        }
      ++row;
    }
  }
  const report::Point heat = report::heatmap_size(m);
  const double left = 70, bar_w = 14, group_w = 3 * bar_w + 30, plot_h = 220, top = 50;
  const double width = std::max({760.0, left + group_w * static_cast<double>(recipes.size()) + 200, heat.x + 20});
  const double heat_top = top + plot_h + 110;
  const double height = heat_top + heat.y + 10;
  report::Svg svg(width, height, 11);
  svg.text(10, 20,
           report::fit("lowp probe at step " + std::to_string(step) + ": each GEMM's error against float32 (bias\u00b2 + variance)",
                       width - 20, 12 * 1.1),
           "font-weight=\"bold\" font-size=\"12\"");
  const auto y_of = [&](double v) { return top + plot_h * (1 - (std::log10(v) - d0) / (d1 - d0)); };
  report::y_grid(svg, report::log_ticks(d0, d1), y_of, left, width - 190);
  svg.turned_text(16, top + plot_h / 2, -90, "relative squared error", "text-anchor=\"middle\"");
  for (std::size_t i = 0; i < recipes.size(); ++i) {
    const double x0 = left + 10 + group_w * static_cast<double>(i);
    for (std::size_t g = 0; g < 3; ++g) {
      const auto it = model.find({recipes[i], gemms[g]});
      if (it == model.end()) continue;
      const Row& r = *it->second;
      const double b2 = std::max(0.0, r.bias2.mean), total = b2 + r.variance;
      if (!(total > 0)) continue;
      const double x = x0 + bar_w * static_cast<double>(g), bottom = top + plot_h;
      const std::string tip = recipes[i] + " " + gemms[g] + ": bias2 " + num(r.bias2.mean) + ", variance " + num(r.variance) +
                              ", rel_mse " + num(r.rel_mse.mean) + " [" + num(r.rel_mse.lo) + ", " + num(r.rel_mse.hi) + "]";
      const auto bar = [&](double v, const std::string& attrs) {
        const double y = std::min(bottom, std::max(top, y_of(v)));
        svg.rect(x, y, bar_w - 2, bottom - y, "fill=\"" + std::string(report::series_colour(g)) + "\"" + attrs, tip);
      };
      bar(total, " fill-opacity=\"0.35\"");
      if (b2 > 0) bar(b2, "");
      if (r.rel_mse.lo > 0 && r.rel_mse.hi > r.rel_mse.lo)  // rel_mse's interval (probe.csv's rel_mse_lo, _hi)
        report::error_bar(svg, x + bar_w / 2 - 1, std::min(bottom, y_of(r.rel_mse.lo)), std::max(top, y_of(r.rel_mse.hi)), "#222");
    }
    std::string label = recipes[i];
    const auto mm = model.find({recipes[i], "grad"});
    if (mm != model.end() && mm->second->noise_ratio < kSqrt3) label += " (stalls)";
    svg.turned_text(x0 + 8, top + plot_h + 14, 30, label);
  }
  svg.rect(left, top, width - 190 - left, plot_h, "fill=\"none\" stroke=\"#999\"");
  const double lx = width - 175;
  for (std::size_t g = 0; g < 3; ++g) {
    const double y = top + 14 * static_cast<double>(g);
    svg.rect(lx, y, 10, 10, "fill=\"" + std::string(report::series_colour(g)) + "\"");
    svg.text(lx + 15, y + 9, gemms[g] + " (all linears)");
  }
  report::caption(svg, lx, top + 60, 170,
                  "dark: bias\u00b2; light: bias\u00b2 + variance; whisker: rel_mse's interval. (stalls): |g| < \u221a3 noise",
                  11, "fill=\"#333\"");
  svg.text(10, heat_top - 12, "rel_mse per layer and linear.gemm", "font-weight=\"bold\" font-size=\"12\"");
  report::draw_heatmap(svg, m, 10, heat_top);
  return svg.finish();
}

}  // namespace

void write_probe(const std::string& dir, const std::vector<Row>& rows, const Options& o) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("cannot create " + dir + ": " + ec.message());
  detail::write_file_atomic((fs::path(dir) / "probe.csv").string(), csv(rows));
  detail::write_file_atomic((fs::path(dir) / "probe.json").string(), json(rows, o));
  detail::write_file_atomic((fs::path(dir) / "probe.svg").string(), chart(rows, o));
}

}  // namespace lowp::accuracy::train::probe
