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
  using report::svg_number;
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
  const double left = 70, bar_w = 14, group_w = 3 * bar_w + 26, plot_h = 220, top = 50;
  const double width = std::max(760.0, left + group_w * static_cast<double>(recipes.size()) + 180);
  const std::vector<std::string> linears = {"wq", "wk", "wv", "wo", "w_gate", "w_up", "w_down", "classifier"};
  const std::vector<std::string> gemms = {"fwd", "dgrad", "wgrad"};
  const double cw = 9, ch = 12, panel_h = ch * static_cast<double>(layers.size()) + 30;
  const double heat_top = top + plot_h + 150;
  const double height = heat_top + 60 + panel_h * static_cast<double>(recipes.size()) + 50;
  report::Svg svg(width, height, 11);
  svg.text(left, 20, "lowp probe at step " + std::to_string(step) + ": each GEMM's error against float32 (bias\u00b2 + variance)",
           "font-weight=\"bold\"");
  const auto y_of = [&](double v) { return top + plot_h * (1 - (std::log10(v) - d0) / (d1 - d0)); };
  for (double e = d0; e <= d1; ++e) {
    const double y = y_of(std::pow(10.0, e));
    svg.line(left, y, width - 170, y, "stroke=\"#ddd\"");
    svg.text(left - 6, y + 4, "1e" + std::to_string(static_cast<int>(e)), "text-anchor=\"end\"");
  }
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
                              ", rel_mse " + num(r.rel_mse.mean);
      const auto bar = [&](double v, const std::string& attrs) {
        const double y = std::min(bottom, std::max(top, y_of(v)));
        svg.rect(x, y, bar_w - 2, bottom - y, "fill=\"" + std::string(report::series_colour(g)) + "\"" + attrs, tip);
      };
      bar(total, " fill-opacity=\"0.35\"");
      if (b2 > 0) bar(b2, "");
    }
    std::string label = recipes[i];
    const auto m = model.find({recipes[i], "grad"});
    if (m != model.end() && m->second->noise_ratio < kSqrt3) label += " (stalls)";
    svg.turned_text(x0 + 20, top + plot_h + 12, 30, label);
  }
  for (std::size_t g = 0; g < 3; ++g) {
    const double y = top + 14 * static_cast<double>(g);
    svg.rect(width - 160, y, 10, 10, "fill=\"" + std::string(report::series_colour(g)) + "\"");
    svg.text(width - 145, y + 9, gemms[g] + " (all linears)");
  }
  svg.text(width - 160, top + 56, "dark: bias\u00b2");
  svg.text(width - 160, top + 70, "light: bias\u00b2 + variance");
  svg.text(width - 160, top + 84, "(stalls): |g| < \u221a3 noise");
  // heatmap
  svg.text(left - 60, heat_top - 70, "rel_mse per layer (rows; -1: classifier) and linear.gemm (columns), log colour " +
                                    std::string("1e") + std::to_string(static_cast<int>(d0)) + " (dark) .. 1e" +
                                    std::to_string(static_cast<int>(d1)) + " (yellow)");
  for (std::size_t li = 0; li < linears.size(); ++li)
    for (std::size_t g = 0; g < 3; ++g) {
      const double x = left + 60 + cw * static_cast<double>(li * 3 + g) + 4 * static_cast<double>(li);
      if (g == 0) svg.turned_text(x, heat_top - 4, -60, linears[li]);
    }
  for (std::size_t i = 0; i < recipes.size(); ++i) {
    const double y0 = heat_top + panel_h * static_cast<double>(i);
    svg.text(left - 60, y0 + 10, recipes[i]);
    std::size_t row = 0;
    for (int layer : layers) {
      const double y = y0 + ch * static_cast<double>(row++);
      svg.text(left + 52, y + 10, std::to_string(layer), "text-anchor=\"end\" fill=\"#555\"");
      for (std::size_t li = 0; li < linears.size(); ++li)
        for (std::size_t g = 0; g < 3; ++g) {
          const auto it = cell.find({recipes[i], layer, linears[li], gemms[g]});
          if (it == cell.end() || !(it->second->rel_mse.mean > 0)) continue;
          const double v = it->second->rel_mse.mean;
          const double x = left + 60 + cw * static_cast<double>(li * 3 + g) + 4 * static_cast<double>(li);
          svg.rect(x, y, cw - 1, ch - 1, "fill=\"" + report::ramp_colour((std::log10(v) - d0) / (d1 - d0)) + "\"",
                   recipes[i] + " layer " + std::to_string(layer) + " " + linears[li] + " " + gemms[g] + ": rel_mse " + num(v));
        }
    }
  }
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
