#include "train/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "io/save_model.hpp"
#include "lowp/numerics/error.hpp"
#include "train/train_recipe.hpp"

namespace lowp::accuracy::train {

std::vector<RecipeRun> compare_recipes(const TrainOptions& base, std::vector<std::string> recipes,
                                       const std::function<void(const std::string&, const StepInfo&)>& progress) {
  if (std::find(recipes.begin(), recipes.end(), "fp32") == recipes.end()) recipes.insert(recipes.begin(), "fp32");
  std::vector<std::string> names;  // a recipe file trains under its `name`
  for (const auto& r : recipes) names.push_back(lowp::train::find_train_recipe(r).name);  // all checked first
  std::vector<RecipeRun> runs;
  for (std::size_t i = 0; i < recipes.size(); ++i) {
    const std::string& r = names[i];
    TrainOptions o = base;
    o.recipe = recipes[i];
    o.out = (std::filesystem::path(base.out) / r).string();
    runs.push_back({r, run_training(o, false, [&](const StepInfo& s) {
                      if (progress) progress(r, s);
                    })});
  }
  write_comparison(base.out, runs);
  return runs;
}

void write_comparison(const std::string& dir, const std::vector<RecipeRun>& runs) {
  double ref = NAN;
  for (const auto& r : runs)
    if (r.recipe == "fp32") ref = r.result.final_val_loss;
  std::string csv = "recipe,final_val_loss,gap_pct\n";
  char buf[160];
  for (const auto& r : runs) {
    std::snprintf(buf, sizeof buf, "%s,%.6f,%.3f\n", r.recipe.c_str(), r.result.final_val_loss,
                  100.0 * (r.result.final_val_loss - ref) / ref);
    csv += buf;
  }
  const std::filesystem::path d(dir);
  detail::write_file_atomic((d / "summary.csv").string(), csv);

  // One polyline per recipe: x = step, y = validation loss.
  double x1 = 1, y0 = INFINITY, y1 = -INFINITY;
  for (const auto& r : runs)
    for (const auto& [s, l] : r.result.val_curve) {
      x1 = std::max(x1, static_cast<double>(s));
      if (std::isfinite(l)) y0 = std::min(y0, l), y1 = std::max(y1, l);
    }
  if (!(y1 > y0)) y0 = (std::isfinite(y0) ? y0 : 0) - 1, y1 = y0 + 2;
  const double W = 640, H = 400, L = 60, R = 150, Tp = 20, Bm = 40;
  const auto px = [&](double s) { return L + (W - L - R) * s / x1; };
  const auto py = [&](double l) { return Tp + (H - Tp - Bm) * (1.0 - (l - y0) / (y1 - y0)); };
  static const char* colors[] = {"#000000", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"640\" height=\"400\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg += "<rect width=\"640\" height=\"400\" fill=\"white\"/>\n";
  std::snprintf(buf, sizeof buf, "<path d=\"M%.1f %.1f V%.1f H%.1f\" stroke=\"black\" fill=\"none\"/>\n", L, Tp, H - Bm, W - R);
  svg += buf;
  for (int i = 0; i <= 4; ++i) {
    const double l = y0 + (y1 - y0) * i / 4;
    std::snprintf(buf, sizeof buf, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.3f</text>\n", L - 4, py(l) + 4, l);
    svg += buf;
  }
  std::snprintf(buf, sizeof buf, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">step (0 to %.0f)</text>\n", (L + W - R) / 2, H - 12, x1);
  svg += buf;
  svg += "<text x=\"12\" y=\"14\">validation loss (nats per token)</text>\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const char* c = colors[i % (sizeof colors / sizeof *colors)];
    std::string pts;
    for (const auto& [s, l] : runs[i].result.val_curve) {
      if (!std::isfinite(l)) continue;
      std::snprintf(buf, sizeof buf, "%s%.1f,%.1f", pts.empty() ? "" : " ", px(s), py(l));
      pts += buf;
    }
    svg += "<polyline fill=\"none\" stroke=\"" + std::string(c) + "\" stroke-width=\"1.5\" points=\"" + pts + "\"/>\n";
    std::snprintf(buf, sizeof buf, "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\">%s</text>\n", W - R + 8, Tp + 14.0 * (i + 1), c,
                  runs[i].recipe.c_str());
    svg += buf;
  }
  svg += "</svg>\n";
  detail::write_file_atomic((d / "loss.svg").string(), svg);
}

}  // namespace lowp::accuracy::train
