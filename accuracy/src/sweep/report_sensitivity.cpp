// Writers of the per-tensor sensitivity: table, CSV, JSON, SVG heatmap.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "lowp/accuracy/sensitivity.hpp"
#include "report/svg.hpp"
#include "report/text.hpp"

namespace lowp::accuracy {
namespace {

using report::exact;
using report::fixed;

std::string layer_name(int layer) { return layer < 0 ? "-" : std::to_string(layer); }

}  // namespace

void write_sensitivity_table(std::ostream& out, const Sensitivity& s) {
  const ModelSweep& w = s.sweep;
  out << "Sensitivity: " << w.model << "\n  " << w.tokens << " tokens, ctx " << w.ctx << ", " << w.scored
      << " positions scored\n  " << w.reference << " reference: PPL " << fixed("%.4f", w.ref_ppl) << " +- "
      << fixed("%.4f", w.ref_ppl_se) << "\n";
  if (s.base != "fp32")
    out << "  base recipe '" << s.base << "' (kept under every tensor): KLD " << fixed("%.4e", s.base_cmp.kld_mean)
        << "; kld and dlnppl below are each tensor's increase over it\n";
  out << "Each row: only that tensor quantized to the spec, everything else as the base; sorted by KLD per spec.\n\n";
  std::vector<std::vector<std::string>> table = {
      {"spec", "layer", "tensor", "KLD", "+-", "dln PPL", "SQNR dB", "bits/w", "same top1 %"}};
  std::vector<std::string> failures;
  for (const auto& spec : s.specs) {
    std::vector<const SensitivityRow*> rows;
    for (const auto& r : s.rows)
      if (r.spec == spec) {
        if (r.error.empty())
          rows.push_back(&r);
        else
          failures.push_back(r.t.key() + " @ " + spec + ": " + r.error);
      }
    std::sort(rows.begin(), rows.end(), [](const SensitivityRow* a, const SensitivityRow* b) {
      if (a->kld != b->kld) return a->kld > b->kld;
      return a < b;
    });
    for (const auto* r : rows)
      table.push_back({spec, layer_name(r->t.layer), r->t.tensor, fixed("%.3e", r->kld), fixed("%.1e", r->cmp.kld_se),
                       fixed("%.5f", r->dlnppl), fixed("%.2f", r->sqnr_db),
                       std::isnan(r->bits_per_element) ? "" : fixed("%.4g", r->bits_per_element),
                       fixed("%.2f", r->cmp.same_top1)});
  }
  report::print_table(out, table, {false, true, false, true, true, true, true, true, true});
  for (const auto& f : failures) out << "failed: " << f << '\n';
}

void write_sensitivity_csv(std::ostream& out, const Sensitivity& s) {
  out << "layer,kind,tensor,spec,kld,dlnppl,kld_mean,kld_se,ln_ppl_ratio,ln_ppl_ratio_se,kld_p99,same_top1_pct,"
         "sqnr_db,bits_per_element,rows,cols,tokens,nonfinite,seconds,error\n";
  for (const auto& r : s.rows) {
    const bool ok = r.error.empty();
    const auto num = [&](double v) { return ok ? exact(v) : std::string(); };
    out << r.t.layer << ',' << r.t.kind << ',' << r.t.tensor << ',' << report::csv_field(r.spec) << ',' << num(r.kld)
        << ',' << num(r.dlnppl) << ',' << num(r.cmp.kld_mean) << ',' << num(r.cmp.kld_se) << ','
        << num(r.cmp.ln_ppl_ratio) << ',' << num(r.cmp.ln_ppl_ratio_se) << ',' << num(r.cmp.kld_p99) << ','
        << num(r.cmp.same_top1) << ',' << num(r.sqnr_db) << ','
        << (std::isnan(r.bits_per_element) ? "" : exact(r.bits_per_element)) << ',' << r.t.rows << ',' << r.t.cols
        << ',' << r.cmp.tokens << ',' << r.cmp.nonfinite << ',' << exact(r.seconds) << ','
        << report::csv_field(r.error) << '\n';
  }
}

void write_sensitivity_json(std::ostream& out, const Sensitivity& s) {
  using report::json_number;
  using report::json_string;
  const ModelSweep& w = s.sweep;
  out << "{\n  \"model\": " << json_string(w.model) << ",\n  \"tokens\": " << w.tokens << ",\n  \"scored\": " << w.scored
      << ",\n  \"ctx\": " << w.ctx << ",\n  \"reference\": {\"recipe\": " << json_string(w.reference)
      << ", \"ppl\": " << json_number(w.ref_ppl) << ", \"ppl_se\": " << json_number(w.ref_ppl_se)
      << "},\n  \"base\": {\"recipe\": " << json_string(s.base) << ", \"kld_mean\": " << json_number(s.base_cmp.kld_mean)
      << ", \"ln_ppl_ratio\": " << json_number(s.base_cmp.ln_ppl_ratio) << "},\n  \"specs\": [";
  for (std::size_t i = 0; i < s.specs.size(); ++i) out << (i ? ", " : "") << json_string(s.specs[i]);
  out << "],\n  \"rows\": [";
  for (std::size_t i = 0; i < s.rows.size(); ++i) {
    const auto& r = s.rows[i];
    const bool ok = r.error.empty();
    const auto num = [&](double v) { return ok ? json_number(v) : std::string("null"); };
    out << (i ? ",\n    {" : "\n    {") << "\"layer\": " << r.t.layer << ", \"kind\": " << json_string(r.t.kind)
        << ", \"tensor\": " << json_string(r.t.tensor) << ", \"spec\": " << json_string(r.spec)
        << ", \"kld\": " << num(r.kld) << ", \"dlnppl\": " << num(r.dlnppl) << ", \"kld_mean\": " << num(r.cmp.kld_mean)
        << ", \"kld_se\": " << num(r.cmp.kld_se) << ", \"ln_ppl_ratio\": " << num(r.cmp.ln_ppl_ratio)
        << ", \"ln_ppl_ratio_se\": " << num(r.cmp.ln_ppl_ratio_se) << ", \"kld_p99\": " << num(r.cmp.kld_p99)
        << ", \"same_top1_pct\": " << num(r.cmp.same_top1) << ", \"sqnr_db\": " << num(r.sqnr_db)
        << ", \"bits_per_element\": " << json_number(r.bits_per_element) << ", \"rows\": " << r.t.rows
        << ", \"cols\": " << r.t.cols << ", \"tokens\": " << r.cmp.tokens << ", \"nonfinite\": " << r.cmp.nonfinite
        << ", \"seconds\": " << json_number(r.seconds) << ", \"error\": " << (ok ? "null" : json_string(r.error)) << "}";
  }
  out << (s.rows.empty() ? "]\n}\n" : "\n  ]\n}\n");
}

// One panel per spec: a row per layer (the classifier last), a column per tensor key; the
// colour is log10 of the tensor's KLD on one scale shared by every panel.
void write_sensitivity_svg(std::ostream& out, const Sensitivity& s) {
  std::vector<std::string> cols;
  std::vector<int> layers;
  for (const auto& r : s.rows) {
    if (std::find(cols.begin(), cols.end(), r.t.tensor) == cols.end()) cols.push_back(r.t.tensor);
    if (std::find(layers.begin(), layers.end(), r.t.layer) == layers.end()) layers.push_back(r.t.layer);
  }
  double kmin = INFINITY, kmax = 0;
  for (const auto& r : s.rows)
    if (r.error.empty() && std::isfinite(r.kld) && r.kld > 0) kmin = std::min(kmin, r.kld), kmax = std::max(kmax, r.kld);
  const auto range = report::decades(kmin, kmax, {-6, 0});
  const double lo = range.first, hi = range.second;
  const auto colour = [&](double kld) {
    if (!std::isfinite(kld)) return std::string("#d62728");
    if (kld <= 0) return std::string("#f0f0f0");
    return report::log_ramp_colour(kld, lo, hi);
  };
  report::Heatmap m;
  m.title = "lowp sensitivity: " + report::model_title(s.sweep.model) + ", KLD from " + s.sweep.reference + " with one tensor quantized";
  m.panels = s.specs;
  m.cols = cols;
  for (const int l : layers) m.rows.push_back(l < 0 ? std::string("classifier") : "layer " + std::to_string(l));
  m.cells.resize(m.panels.size() * layers.size() * cols.size());
  std::map<std::pair<std::string, std::pair<int, std::string>>, const SensitivityRow*> at;
  for (const auto& r : s.rows) at[{r.spec, {r.t.layer, r.t.tensor}}] = &r;
  for (std::size_t p = 0; p < s.specs.size(); ++p)
    for (std::size_t l = 0; l < layers.size(); ++l)
      for (std::size_t c = 0; c < cols.size(); ++c) {
        const auto it = at.find({s.specs[p], {layers[l], cols[c]}});
        if (it == at.end()) continue;
        const SensitivityRow& r = *it->second;
        report::HeatCell& cell = m.cells[(p * layers.size() + l) * cols.size() + c];
        cell.colour = colour(r.error.empty() ? r.kld : NAN);
        cell.tip = r.t.key() + " @ " + r.spec + ": " +
                   (r.error.empty() ? "KLD " + fixed("%.4g", r.kld) + ", dln PPL " + fixed("%.4g", r.dlnppl)
                                    : "failed: " + r.error);
      }
  m.key_title = "KLD (nats/token, log scale)";
  m.key_lo = lo;
  m.key_hi = hi;
  m.key_note = "red: NaN or failed; grey: KLD 0. Hover a cell for its numbers.";
  out << report::heatmap(m);
}

}  // namespace lowp::accuracy
