#include "train/compare.hpp"

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "dist/comm.hpp"
#include "file/atomic_file.hpp"
#include "lowp/numerics/error.hpp"
#include "recipe/train_recipe.hpp"
#include "report/svg.hpp"

namespace lowp::accuracy::train {

double t_quantile_975(int dof) {
  if (dof < 1) throw Error("Student's t needs at least 1 degree of freedom, not " + std::to_string(dof));
  return boost::math::quantile(boost::math::students_t_distribution<double>(dof), 0.975);
}

SeedStats seed_stats(const std::vector<double>& losses, const std::vector<double>& fp32_losses) {
  if (losses.empty() || losses.size() != fp32_losses.size())
    throw Error("seed statistics: " + std::to_string(losses.size()) + " losses against " + std::to_string(fp32_losses.size()) +
                " fp32 losses");
  const std::size_t k = losses.size();
  const auto mean_sd = [k](const std::vector<double>& v, double& mean, double& sd) {
    mean = 0;
    for (double x : v) mean += x;
    mean /= static_cast<double>(k);
    double ss = 0;
    for (double x : v) ss += (x - mean) * (x - mean);
    sd = k > 1 ? std::sqrt(ss / static_cast<double>(k - 1)) : NAN;
  };
  SeedStats s;
  s.k = static_cast<int>(k);
  double sd = 0, ref = 0, ref_sd = 0, d_sd = 0;
  mean_sd(losses, s.mean, sd);
  mean_sd(fp32_losses, ref, ref_sd);
  std::vector<double> d(k);
  for (std::size_t i = 0; i < k; ++i) d[i] = losses[i] - fp32_losses[i];
  mean_sd(d, s.gap, d_sd);
  s.se = sd / std::sqrt(static_cast<double>(k));
  // The interval is the paired one: the seed's own luck (weights, batches) cancels in d_i.
  const double half = k > 1 ? t_quantile_975(static_cast<int>(k) - 1) * d_sd / std::sqrt(static_cast<double>(k)) : NAN;
  s.gap_lo = s.gap - half;
  s.gap_hi = s.gap + half;
  // Relative to fp32's mean loss, taken as a constant (its own spread is in the paired d_i).
  s.gap_pct = 100.0 * s.gap / ref;
  s.gap_pct_lo = 100.0 * s.gap_lo / ref;
  s.gap_pct_hi = 100.0 * s.gap_hi / ref;
  s.exceeds_noise = k > 1 && (s.gap_lo > 0 || s.gap_hi < 0);
  return s;
}

std::vector<RecipeRun> compare_recipes(const TrainOptions& base, std::vector<std::string> recipes, int seeds,
                                       const std::function<void(const std::string&, const StepInfo&)>& progress) {
  if (seeds < 1) throw Error("--seeds must be at least 1, not " + std::to_string(seeds));
  if (std::find(recipes.begin(), recipes.end(), "fp32") == recipes.end()) recipes.insert(recipes.begin(), "fp32");
  std::vector<std::string> names;  // a recipe file trains under its `name`
  for (const auto& r : recipes) names.push_back(lowp::train::find_train_recipe(r).name);  // all checked first
  const std::size_t K = static_cast<std::size_t>(seeds), n_runs = recipes.size() * K;
  const auto seed_of = [&](std::size_t run) { return base.seed + run % K; };
  // Under mpirun the (recipe, seed) runs are dealt to the ranks, run i to rank i mod size, each
  // trained by one rank alone; rank 0 gathers the results in run order and writes the
  // comparison. Dealt in turn, a recipe's seeds spread over the ranks: contiguous shares gave
  // one rank every costly recipe at the end of a list (fp8-block128, the 4-bit ones).
  const auto ranks = static_cast<std::size_t>(dist::size());
  std::vector<std::uint8_t> bytes;  // per run: final loss, comm SQNR, curve length, (step, loss) pairs
  const auto put = [&](const void* p, std::size_t n) {
    const auto* c = static_cast<const std::uint8_t*>(p);
    bytes.insert(bytes.end(), c, c + n);
  };
  for (std::size_t i = static_cast<std::size_t>(dist::rank()); i < n_runs; i += ranks) {
    const std::string& r = names[i / K];
    TrainOptions o = base;
    o.recipe = recipes[i / K];
    o.seed = seed_of(i);
    std::filesystem::path dir = std::filesystem::path(base.out) / r;
    std::string label = "[" + r + "] ";
    if (K > 1) {
      dir /= "seed" + std::to_string(o.seed);
      label = "[" + r + " seed " + std::to_string(o.seed) + "] ";
    }
    o.out = dir.string();
    o.data_parallel = false;
    const TrainResult res = run_training(o, false, [&](const StepInfo& s) {
      if (progress) progress(label, s);
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
  std::vector<SeedRun> in_order(n_runs);
  for (std::size_t rank = 0; rank < all.size(); ++rank) {
    const std::vector<std::uint8_t>& b = all[rank];
    std::size_t at = 0;
    const auto take = [&](void* dst, std::size_t n) {
      if (b.size() - at < n) throw Error("--recipes: rank " + std::to_string(rank) + " sent a truncated result");
      std::memcpy(dst, b.data() + at, n);
      at += n;
    };
    for (std::size_t i = rank; i < n_runs; i += ranks) {
      SeedRun& run = in_order[i];
      run.seed = seed_of(i);
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
    }
  }
  for (const auto& name : names) runs.push_back(RecipeRun{name, {}});
  for (std::size_t i = 0; i < n_runs; ++i) runs[i / K].seeds.push_back(std::move(in_order[i]));
  write_comparison(base.out, runs, base.grad_comm != "fp32");
  return runs;
}

std::vector<SeedStats> comparison_stats(const std::vector<RecipeRun>& runs) {
  const auto losses = [](const RecipeRun& r) {
    std::vector<double> v;
    for (const auto& s : r.seeds) v.push_back(s.result.final_val_loss);
    return v;
  };
  const auto ref = std::find_if(runs.begin(), runs.end(), [](const RecipeRun& r) { return r.recipe == "fp32"; });
  if (ref == runs.end()) throw Error("recipe comparison without fp32: no gap to compute");
  std::vector<SeedStats> stats;
  for (const auto& r : runs) stats.push_back(seed_stats(losses(r), losses(*ref)));
  return stats;
}

void write_comparison(const std::string& dir, const std::vector<RecipeRun>& runs, bool comm_column) {
  const std::vector<SeedStats> stats = comparison_stats(runs);
  const bool many = !runs.empty() && runs[0].seeds.size() > 1;
  std::string csv = comm_column ? "recipe,final_val_loss,gap_pct,grad_comm_sqnr_db" : "recipe,final_val_loss,gap_pct";
  csv += many ? ",seeds,final_val_loss_se,gap,gap_lo,gap_hi,gap_pct_lo,gap_pct_hi,exceeds_noise\n" : "\n";
  std::string per_seed = "recipe,seed,final_val_loss\n";
  char buf[256];
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const SeedStats& s = stats[i];
    std::snprintf(buf, sizeof buf, "%s,%.6f,%.3f", runs[i].recipe.c_str(), s.mean, s.gap_pct);
    csv += buf;
    if (comm_column) {
      double sqnr = 0;
      for (const auto& r : runs[i].seeds) sqnr += r.result.grad_comm_sqnr_db;
      std::snprintf(buf, sizeof buf, ",%.2f", sqnr / static_cast<double>(runs[i].seeds.size()));
      csv += buf;
    }
    if (many) {
      std::snprintf(buf, sizeof buf, ",%d,%.6f,%.6f,%.6f,%.6f,%.3f,%.3f,%d", s.k, s.se, s.gap, s.gap_lo, s.gap_hi, s.gap_pct_lo,
                    s.gap_pct_hi, s.exceeds_noise ? 1 : 0);
      csv += buf;
    }
    csv += "\n";
    for (const auto& r : runs[i].seeds) {
      std::snprintf(buf, sizeof buf, "%s,%llu,%.9g\n", runs[i].recipe.c_str(), static_cast<unsigned long long>(r.seed),
                    r.result.final_val_loss);
      per_seed += buf;
    }
  }
  const std::filesystem::path d(dir);
  detail::write_file_atomic((d / "summary.csv").string(), csv);
  if (many) detail::write_file_atomic((d / "seeds.csv").string(), per_seed);

  // Top panel: a line per recipe, x = step, y = validation loss (the mean over the seeds, whose
  // evaluations fall on the same steps). Bottom panel: each recipe's gap to fp32 at those steps,
  // seed-paired as in summary.csv (seed_stats), with its 95% interval when there are seeds.
  const std::size_t ref = static_cast<std::size_t>(
      std::find_if(runs.begin(), runs.end(), [](const RecipeRun& r) { return r.recipe == "fp32"; }) - runs.begin());
  report::XyChart chart;
  chart.title = many ? "lowp train: validation loss and gap to fp32, mean of " + std::to_string(runs[0].seeds.size()) + " seeds"
                     : "lowp train: validation loss and gap to fp32";
  chart.x = {"step", false};
  report::XyPanel loss, gap;
  loss.y = {"validation loss (nats/token)", false};
  gap.y = {"gap to fp32 (% of its loss)", false};
  gap.height = 170;
  gap.rules = {0};
  chart.note = many ? "Legend: each recipe's final gap to fp32, seed-paired, with its 95% interval; * the interval excludes 0 "
                      "(larger than the seed noise). Bars in the lower panel: the same interval at each evaluation."
                    : "One seed: no noise estimate (train with --seeds K for intervals).";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    report::XySeries line, g;
    line.label = runs[i].recipe;
    if (many && i != ref) {
      std::snprintf(buf, sizeof buf, " %+.2f%% [%+.2f, %+.2f]%s", stats[i].gap_pct, stats[i].gap_pct_lo, stats[i].gap_pct_hi,
                    stats[i].exceeds_noise ? " *" : "");
      line.label += buf;
    }
    line.colour = g.colour = std::string(report::series_colour(i));
    g.dodge = 4 * (static_cast<double>(i) - static_cast<double>(runs.size()) / 2);  // the recipes' bars side by side
    const auto& c0 = runs[i].seeds.empty() ? std::vector<std::pair<int, double>>{} : runs[i].seeds[0].result.val_curve;
    for (std::size_t p = 0; p < c0.size(); ++p) {
      std::vector<double> l, l32;  // this evaluation's loss per seed, and fp32's of the same seeds
      for (std::size_t j = 0; j < runs[i].seeds.size() && j < runs[ref].seeds.size(); ++j) {
        const auto& a = runs[i].seeds[j].result.val_curve;
        const auto& b = runs[ref].seeds[j].result.val_curve;
        if (p < a.size() && p < b.size() && a[p].first == b[p].first) l.push_back(a[p].second), l32.push_back(b[p].second);
      }
      double mean = 0;
      for (const auto& s : runs[i].seeds) mean += p < s.result.val_curve.size() ? s.result.val_curve[p].second : NAN;
      const double step = c0[p].first;
      line.points.push_back({step, mean / static_cast<double>(runs[i].seeds.size())});
      if (i == ref || l.empty()) continue;
      const SeedStats st = seed_stats(l, l32);
      g.points.push_back({step, st.gap_pct});
      g.err.push_back(many ? (st.gap_pct_hi - st.gap_pct_lo) / 2 : NAN);
    }
    loss.series.push_back(std::move(line));
    gap.series.push_back(std::move(g));
  }
  chart.panels = {std::move(loss), std::move(gap)};
  const std::string svg = report::xy_chart(chart);
  detail::write_file_atomic((d / "loss.svg").string(), svg);
}

}  // namespace lowp::accuracy::train
