// Writers of the model sweep: table, per-layer table, CSV, JSON, SVG.
#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "lowp/accuracy/report.hpp"
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

void write_model_sweep_svg(std::ostream& out, const ModelSweep& s) {
  const auto& res = s.results;
  // KLD axis: whole decades around the positive finite means; PPL axis: 0 to the largest.
  double kmin = INFINITY, kmax = 0, pmax = std::isfinite(s.ref_ppl) ? s.ref_ppl : 0;
  for (const auto& r : res) {
    if (!r.error.empty()) continue;
    if (std::isfinite(r.cmp.kld_mean) && r.cmp.kld_mean > 0) {
      kmin = std::min(kmin, r.cmp.kld_mean);
      kmax = std::max(kmax, r.cmp.kld_mean);
    }
    if (std::isfinite(r.cmp.ppl)) pmax = std::max(pmax, r.cmp.ppl);
  }
  const auto range = report::decades(kmin, kmax, {-6, 0});
  const double lo = range.first, hi = range.second;
  pmax = pmax > 0 ? pmax * 1.1 : 1;

  const double row_h = 20, label_w = 190, panel_w = 330, gap = 70, x0 = 10, top_y = 70;
  const double kx = x0 + label_w, ppx = kx + panel_w + gap;
  const double plot_h = static_cast<double>(res.size()) * row_h;
  const double width = ppx + panel_w + 60, height = top_y + plot_h + 50;
  const auto kpos = [&](double v) { return (std::log10(v) - lo) / (hi - lo) * panel_w; };
  const auto ppos = [&](double v) { return std::clamp(v / pmax, 0.0, 1.0) * panel_w; };
  const std::string kld_fill = "fill=\"" + std::string(report::series_colour(0)) + "\"",
                    ppl_fill = "fill=\"" + std::string(report::series_colour(1)) + "\"";

  report::Svg svg(width, height, 11);
  svg.text(x0, 18, "lowp sweep: " + s.model + ", " + std::to_string(s.scored) + " positions scored, ctx " + std::to_string(s.ctx),
           "font-size=\"14\" font-weight=\"bold\"");
  svg.text(kx, top_y - 30, "mean KLD from fp32 (nats/token, log scale)", "font-weight=\"bold\"");
  svg.text(ppx, top_y - 30, "perplexity (" + s.reference + " reference " + report::fixed("%.4f", s.ref_ppl) + ", dashed)",
           "font-weight=\"bold\"");
  const auto grid = [&](double gx, const std::string& label) {
    svg.line(gx, top_y - 4, gx, top_y + plot_h, "stroke=\"#ddd\"");
    svg.text(gx, top_y - 8, label, "text-anchor=\"middle\" font-size=\"9\" fill=\"#555\"");
  };
  for (double d = lo; d <= hi + 1e-9; d += 1) grid(kx + kpos(std::pow(10.0, d)), "1e" + report::svg_number(d));  // decades
  for (int k = 0; k <= 4; ++k) {
    const double v = pmax * k / 4;
    grid(ppx + ppos(v), report::fixed("%.3g", v));
  }
  for (std::size_t i = 0; i < res.size(); ++i) {
    const auto& r = res[i];
    const double y = top_y + static_cast<double>(i) * row_h, ty = y + row_h * 0.65;
    svg.text(kx - 6, ty, r.recipe, "text-anchor=\"end\"", r.note);
    if (!r.error.empty()) {  // shortened to the chart's width; the whole message in the tooltip
      std::size_t cut = std::min<std::size_t>(r.error.size(), 107);
      while (cut > 0 && cut < r.error.size() && (static_cast<unsigned char>(r.error[cut]) & 0xc0) == 0x80) --cut;  // UTF-8
      const std::string shown = cut < r.error.size() ? r.error.substr(0, cut) + "..." : r.error;
      svg.text(kx + 4, ty, "failed: " + shown, "fill=\"#b00\"", r.error);
      continue;
    }
    const double k = r.cmp.kld_mean;
    std::string klabel = report::fixed("%.3g", k);
    double kw = 0;
    if (std::isnan(k)) klabel = "no finite positions";
    else if (k > 0) kw = kpos(k);
    else klabel = report::fixed("%.3g", k) + " (identical)";
    if (r.cmp.nonfinite) klabel += ", " + std::to_string(r.cmp.nonfinite) + " nonfinite";
    svg.rect(kx, y + 3, kw, row_h - 6, kld_fill);
    svg.text(kx + kw + 4, ty, klabel);
    const double p = r.cmp.ppl, pw = std::isfinite(p) ? ppos(p) : 0;
    svg.rect(ppx, y + 3, pw, row_h - 6, ppl_fill);
    svg.text(ppx + pw + 4, ty, report::fixed("%.4g", p));
  }
  if (std::isfinite(s.ref_ppl)) {
    const double rx = ppx + ppos(s.ref_ppl);
    svg.line(rx, top_y - 4, rx, top_y + plot_h, "stroke=\"#333\" stroke-dasharray=\"4 3\"");
  }
  svg.text(x0, height - 14,
           "KLD per token = sum_v p_ref(v) (log p_ref(v) - log p_Q(v)), averaged over the scored positions; recipes sorted by it",
           "fill=\"#555\"");
  out << svg.finish();
}

}  // namespace lowp::accuracy
