// Writers of the model sweep: table, per-layer table, CSV, JSON, SVG.
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

std::string layer_name(int layer) { return layer < 0 ? "-" : std::to_string(layer); }

// The contract columns (docs/sweep.md), in CSV order, with each recipe's values.
struct Column {
  const char* name;
  double (*get)(const RecipeResult&);
};
constexpr Column kColumns[] = {
    {"ppl", [](const RecipeResult& r) { return r.cmp.ppl; }},
    {"ppl_se", [](const RecipeResult& r) { return r.cmp.ppl_se; }},
    {"ln_ppl_ratio", [](const RecipeResult& r) { return r.cmp.ln_ppl_ratio; }},
    {"ln_ppl_ratio_se", [](const RecipeResult& r) { return r.cmp.ln_ppl_ratio_se; }},
    {"kld_mean", [](const RecipeResult& r) { return r.cmp.kld_mean; }},
    {"kld_se", [](const RecipeResult& r) { return r.cmp.kld_se; }},
    {"kld_median", [](const RecipeResult& r) { return r.cmp.kld_median; }},
    {"kld_p99", [](const RecipeResult& r) { return r.cmp.kld_p99; }},
    {"kld_max", [](const RecipeResult& r) { return r.cmp.kld_max; }},
    {"dp_mean", [](const RecipeResult& r) { return r.cmp.dp_mean; }},
    {"dp_rms", [](const RecipeResult& r) { return r.cmp.dp_rms; }},
    {"same_top1_pct", [](const RecipeResult& r) { return r.cmp.same_top1; }},
};

}  // namespace

void write_model_sweep_table(std::ostream& out, const ModelSweep& s) {
  out << "Model sweep: " << s.model << "\n  " << s.tokens << " tokens, ctx " << s.ctx << ", " << s.scored
      << " positions scored (" << (s.score_all ? "every position" : "the second half of each window")
      << ")\n  " << s.reference << " reference: PPL " << fixed("%.4f", s.ref_ppl) << " +- " << fixed("%.4f", s.ref_ppl_se) << " ("
      << fixed("%.2f", s.ref_seconds) << " s)";
  if (s.ref_nonfinite) out << ", " << s.ref_nonfinite << " nonfinite positions";
  out << "\nSorted by mean KL divergence from the reference (nats per token); dp = p_Q(next) - p_ref(next).\n\n";
  std::vector<std::vector<std::string>> table = {{"recipe", "PPL", "+-", "ln(PPL_Q/PPL_ref)", "KLD mean", "+-",
                                                  "KLD median", "KLD p99", "KLD max", "same top1 %", "dp mean",
                                                  "dp rms", "nonfinite", "seconds"}};
  std::vector<std::string> failures;
  for (const auto& r : s.results) {
    if (!r.error.empty()) {
      failures.push_back(r.recipe + ": " + r.error);
      continue;
    }
    const Comparison& c = r.cmp;
    table.push_back({r.recipe, fixed("%.4f", c.ppl), fixed("%.4f", c.ppl_se), fixed("%.5f", c.ln_ppl_ratio),
                     fixed("%.3e", c.kld_mean), fixed("%.1e", c.kld_se), fixed("%.3e", c.kld_median),
                     fixed("%.3e", c.kld_p99), fixed("%.3e", c.kld_max), fixed("%.2f", c.same_top1),
                     fixed("%.2e", c.dp_mean), fixed("%.2e", c.dp_rms), std::to_string(c.nonfinite),
                     fixed("%.2f", r.seconds)});
  }
  std::vector<bool> right(table[0].size(), true);
  right[0] = false;
  report::print_table(out, table, right);
  for (const auto& f : failures) out << "failed: " << f << '\n';
}

void write_model_sweep_layers(std::ostream& out, const ModelSweep& s) {
  std::vector<std::vector<std::string>> table = {{"recipe", "layer", "point", "SQNR dB", "values", "nonfinite"}};
  for (const auto& r : s.results)
    for (const auto& e : r.tensor_errors)
      table.push_back({r.recipe, layer_name(e.layer), e.point, fixed("%.2f", e.sqnr_db()), std::to_string(e.count),
                       std::to_string(e.nonfinite)});
  out << "\nPer-layer error attribution: SQNR = 10 log10(sum x^2 / sum (q(x) - x)^2) of each quantized tensor,\n"
         "over every call at that point (layer - : not per layer).\n\n";
  report::print_table(out, table, {false, true, false, true, true, true});
}

void write_model_sweep_csv(std::ostream& out, const ModelSweep& s) {
  out << "recipe";
  for (const auto& c : kColumns) out << ',' << c.name;
  out << ",tokens,nonfinite,seconds,error\n";
  for (const auto& r : s.results) {
    out << report::csv_field(r.recipe);
    for (const auto& c : kColumns) out << ',' << (r.error.empty() ? exact(c.get(r)) : "");
    out << ',' << r.cmp.tokens << ',' << r.cmp.nonfinite << ',' << exact(r.seconds) << ','
        << report::csv_field(r.error) << '\n';
  }
}

void write_model_sweep_json(std::ostream& out, const ModelSweep& s) {
  using report::json_number;
  using report::json_string;
  out << "{\n  \"model\": " << json_string(s.model) << ",\n  \"tokens\": " << s.tokens << ",\n  \"scored\": " << s.scored
      << ",\n  \"ctx\": " << s.ctx << ",\n  \"score_all\": " << (s.score_all ? "true" : "false")
      << ",\n  \"reference\": {\"recipe\": " << json_string(s.reference) << ", \"ppl\": " << json_number(s.ref_ppl)
      << ", \"ppl_se\": " << json_number(s.ref_ppl_se) << ", \"nonfinite\": " << s.ref_nonfinite
      << ", \"seconds\": " << json_number(s.ref_seconds) << "},\n  \"recipes\": [";
  for (std::size_t i = 0; i < s.results.size(); ++i) {
    const auto& r = s.results[i];
    out << (i ? ",\n    {" : "\n    {") << "\"recipe\": " << json_string(r.recipe) << ", \"note\": " << json_string(r.note);
    for (const auto& c : kColumns) out << ", \"" << c.name << "\": " << (r.error.empty() ? json_number(c.get(r)) : "null");
    out << ", \"tokens\": " << r.cmp.tokens << ", \"nonfinite\": " << r.cmp.nonfinite
        << ", \"seconds\": " << json_number(r.seconds)
        << ", \"error\": " << (r.error.empty() ? "null" : json_string(r.error)) << ",\n     \"layers\": [";
    for (std::size_t k = 0; k < r.tensor_errors.size(); ++k) {
      const auto& e = r.tensor_errors[k];
      out << (k ? ", " : "") << "{\"layer\": " << e.layer << ", \"point\": " << json_string(e.point)
          << ", \"sqnr_db\": " << json_number(e.sqnr_db()) << ", \"signal\": " << json_number(e.signal)
          << ", \"noise\": " << json_number(e.noise) << ", \"count\": " << e.count << ", \"nonfinite\": " << e.nonfinite
          << "}";
    }
    out << "]}";
  }
  out << (s.results.empty() ? "]\n}\n" : "\n  ]\n}\n");
}

// Two panels of horizontal bars, a row per recipe: mean KLD from the reference on a log axis, and
// ln(PPL_Q / PPL_ref) on a linear one (a log axis of PPL: a bad recipe's bar grows by its log, so
// it does not flatten the rest), each with +-1 standard error whiskers.
void write_model_sweep_svg(std::ostream& out, const ModelSweep& s) {
  const auto& res = s.results;
  const double font = 11;
  double kmin = INFINITY, kmax = 0, llo = 0, lhi = 0;
  double label_w = 60;
  for (const auto& r : res) {
    label_w = std::max(label_w, report::text_width(r.recipe, font) + 16);
    if (!r.error.empty()) continue;
    const double k = r.cmp.kld_mean, ke = std::isfinite(r.cmp.kld_se) ? r.cmp.kld_se : 0;
    if (std::isfinite(k) && k > 0) kmin = std::min(kmin, k), kmax = std::max(kmax, k + ke);
    const double l = r.cmp.ln_ppl_ratio, le = std::isfinite(r.cmp.ln_ppl_ratio_se) ? r.cmp.ln_ppl_ratio_se : 0;
    if (std::isfinite(l)) llo = std::min(llo, l - le), lhi = std::max(lhi, l + le);
  }
  const auto [lo, hi] = report::decades(kmin, kmax, {-6, 0});
  // Round steps for the ln ratios' range; the axis itself ends 3% beyond them, not at a whole step
  // (a tiny negative ratio would otherwise cost a whole step of the panel).
  report::LinearAxis lax = report::round_axis(llo, lhi, 8);
  const double span = lhi > llo ? lhi - llo : 1;
  lax.lo = llo < 0 ? llo - 0.03 * span : 0;
  lax.hi = lhi + 0.03 * span;

  const double row_h = 20, panel_w = 320, gap = 90, x0 = 10, top_y = 74;
  const double kx = x0 + label_w, ppx = kx + panel_w + gap;
  const double plot_h = static_cast<double>(res.size()) * row_h;
  const double width = ppx + panel_w + 70;
  const std::string caption_text =
      "KLD per token = sum_v p_ref(v) (log p_ref(v) - log p_Q(v)), averaged over the scored positions; recipes sorted by it. "
      "ln(PPL_Q/PPL_ref) is the mean change of the scored tokens' log-likelihood; whiskers: +-1 standard error.";
  const double height = top_y + plot_h + 30 + 14.3 * static_cast<double>(report::wrap(caption_text, width - 2 * x0, font).size());
  const auto kpos = [&](double v) { return kx + std::clamp((std::log10(v) - lo) / (hi - lo), 0.0, 1.0) * panel_w; };
  const auto lpos = [&](double v) { return ppx + std::clamp((v - lax.lo) / (lax.hi - lax.lo), 0.0, 1.0) * panel_w; };
  const std::string kld_colour(report::series_colour(0)), ppl_colour(report::series_colour(1));

  report::Svg svg(width, height, 11);
  const std::string title = "lowp sweep: " + report::model_title(s.model) + ", " + std::to_string(s.scored) +
                            " positions scored, ctx " + std::to_string(s.ctx);
  svg.text(x0, 18, report::fit(title, width - 2 * x0, 14 * 1.1), "font-size=\"14\" font-weight=\"bold\"");
  svg.text(kx, top_y - 34, "mean KLD from " + s.reference + " (nats/token, log scale)", "font-weight=\"bold\"");
  svg.text(ppx, top_y - 34,
           report::fit("ln(PPL / PPL_ref), " + s.reference + " PPL " + report::fixed("%.4f", s.ref_ppl), panel_w + 60, font * 1.1),
           "font-weight=\"bold\"");
  report::x_grid(svg, report::log_ticks(lo, hi), kpos, top_y - 4, top_y + plot_h, true);
  report::x_grid(svg, report::linear_ticks(lax), lpos, top_y - 4, top_y + plot_h, true);
  const double zx = lpos(0);
  svg.line(zx, top_y - 4, zx, top_y + plot_h, "stroke=\"#333\"");
  for (std::size_t i = 0; i < res.size(); ++i) {
    const auto& r = res[i];
    const double y = top_y + static_cast<double>(i) * row_h, ty = y + row_h * 0.65, my = y + row_h / 2;
    svg.text(kx - 6, ty, r.recipe, "text-anchor=\"end\"", r.note);
    if (!r.error.empty()) {  // shortened to the chart's width; the whole message in the tooltip
      svg.text(kx + 4, ty, report::fit("failed: " + r.error, width - kx - 14, font), "fill=\"#b00\"", r.error);
      continue;
    }
    const double k = r.cmp.kld_mean;
    std::string klabel = report::fixed("%.3g", k);
    double kw = 0;
    if (std::isnan(k)) klabel = "no finite positions";
    else if (k > 0) kw = kpos(k) - kx;
    else klabel = report::fixed("%.3g", k) + " (identical)";
    if (r.cmp.nonfinite) klabel += ", " + std::to_string(r.cmp.nonfinite) + " nonfinite";
    svg.rect(kx, y + 4, kw, row_h - 8, "fill=\"" + kld_colour + "\" fill-opacity=\"0.8\"");
    double kend = kx + kw;
    if (k > 0 && r.cmp.kld_se > 0) {  // a whisker reaching 0 or below ends at the axis' start
      const double a = k - r.cmp.kld_se > 0 ? kpos(k - r.cmp.kld_se) : kx, b = kpos(k + r.cmp.kld_se);
      svg.line(a, my, b, my, "stroke=\"#222\"");
      svg.line(b, my - 3, b, my + 3, "stroke=\"#222\"");
      kend = std::max(kend, b);
    }
    svg.text(kend + 4, ty, klabel);
    const double l = r.cmp.ln_ppl_ratio;
    if (!std::isfinite(l)) {
      svg.text(zx + 4, ty, report::fixed("%.3g", l));
      continue;
    }
    const double lx = lpos(l);
    svg.rect(std::min(zx, lx), y + 4, std::fabs(lx - zx), row_h - 8, "fill=\"" + ppl_colour + "\" fill-opacity=\"0.8\"");
    double lend = std::max(zx, lx);
    if (r.cmp.ln_ppl_ratio_se > 0) {
      const double a = lpos(l - r.cmp.ln_ppl_ratio_se), b = lpos(l + r.cmp.ln_ppl_ratio_se);
      svg.line(a, my, b, my, "stroke=\"#222\"");
      svg.line(a, my - 3, a, my + 3, "stroke=\"#222\"");
      svg.line(b, my - 3, b, my + 3, "stroke=\"#222\"");
      lend = std::max(lend, b);
    }
    svg.text(lend + 4, ty, report::fixed("%+.3g", l));
  }
  report::caption(svg, x0, top_y + plot_h + 24, width - 2 * x0, caption_text, 11, "fill=\"#555\"");
  out << svg.finish();
}

}  // namespace lowp::accuracy
