#include "train/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "dist/comm.hpp"
#include "io/atomic_file.hpp"
#include "lowp/numerics/error.hpp"
#include "train/train_recipe.hpp"

namespace lowp::accuracy::train {

std::vector<RecipeRun> compare_recipes(const TrainOptions& base, std::vector<std::string> recipes,
                                       const std::function<void(const std::string&, const StepInfo&)>& progress) {
  if (std::find(recipes.begin(), recipes.end(), "fp32") == recipes.end()) recipes.insert(recipes.begin(), "fp32");
  std::vector<std::string> names;  // a recipe file trains under its `name`
  for (const auto& r : recipes) names.push_back(lowp::train::find_train_recipe(r).name);  // all checked first
  // Under mpirun the recipes are dealt to the ranks (dist::share), each trained by one rank
  // alone; rank 0 gathers the results in recipe order and writes the comparison.
  const dist::Range mine = dist::share(recipes.size(), dist::rank(), dist::size());
  std::vector<std::uint8_t> bytes;  // per run: final loss, comm SQNR, curve length, (step, loss) pairs
  const auto put = [&](const void* p, std::size_t n) {
    const auto* c = static_cast<const std::uint8_t*>(p);
    bytes.insert(bytes.end(), c, c + n);
  };
  for (std::size_t i = mine.begin; i < mine.end; ++i) {
    const std::string& r = names[i];
    TrainOptions o = base;
    o.recipe = recipes[i];
    o.out = (std::filesystem::path(base.out) / r).string();
    o.data_parallel = false;
    const TrainResult res = run_training(o, false, [&](const StepInfo& s) {
      if (progress) progress(r, s);
    });
    const std::uint64_t n = res.val_curve.size();
    put(&res.final_val_loss, sizeof(double));
    put(&res.grad_comm_sqnr_db, sizeof(double));
    put(&n, sizeof n);
    for (const auto& [step, loss] : res.val_curve) {
      const std::int64_t st = step;
      put(&st, sizeof st);
      put(&loss, sizeof loss);
    }
  }
  const std::vector<std::vector<std::uint8_t>> all = dist::gather_to_root(bytes);
  std::vector<RecipeRun> runs;
  if (dist::rank() != 0) return runs;
  for (std::size_t rank = 0; rank < all.size(); ++rank) {
    const std::vector<std::uint8_t>& b = all[rank];
    std::size_t at = 0;
    const auto take = [&](void* dst, std::size_t n) {
      if (b.size() - at < n) throw Error("--recipes: rank " + std::to_string(rank) + " sent a truncated result");
      std::memcpy(dst, b.data() + at, n);
      at += n;
    };
    const dist::Range theirs = dist::share(recipes.size(), static_cast<int>(rank), dist::size());
    for (std::size_t i = theirs.begin; i < theirs.end; ++i) {
      RecipeRun run{names[i], {}};
      std::uint64_t n = 0;
      take(&run.result.final_val_loss, sizeof(double));
      take(&run.result.grad_comm_sqnr_db, sizeof(double));
      take(&n, sizeof n);
      for (std::uint64_t j = 0; j < n; ++j) {
        std::int64_t st = 0;
        double loss = 0;
        take(&st, sizeof st);
        take(&loss, sizeof loss);
        run.result.val_curve.emplace_back(static_cast<int>(st), loss);
      }
      runs.push_back(std::move(run));
    }
  }
  write_comparison(base.out, runs, base.grad_comm != "fp32");
  return runs;
}

void write_comparison(const std::string& dir, const std::vector<RecipeRun>& runs, bool comm_column) {
  double ref = NAN;
  for (const auto& r : runs)
    if (r.recipe == "fp32") ref = r.result.final_val_loss;
  std::string csv = comm_column ? "recipe,final_val_loss,gap_pct,grad_comm_sqnr_db\n" : "recipe,final_val_loss,gap_pct\n";
  char buf[160];
  for (const auto& r : runs) {
    std::snprintf(buf, sizeof buf, "%s,%.6f,%.3f", r.recipe.c_str(), r.result.final_val_loss,
                  100.0 * (r.result.final_val_loss - ref) / ref);
    csv += buf;
    if (comm_column) {
      std::snprintf(buf, sizeof buf, ",%.2f", r.result.grad_comm_sqnr_db);
      csv += buf;
    }
    csv += "\n";
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
