// Writers of the per-tensor sensitivity: table, CSV, JSON, SVG heatmap.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "lowp/accuracy/sensitivity.hpp"
#include "sweep/report_util.hpp"

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
  using report::xml_text;
  std::vector<std::string> cols;
  std::vector<int> layers;
  for (const auto& r : s.rows) {
    if (std::find(cols.begin(), cols.end(), r.t.tensor) == cols.end()) cols.push_back(r.t.tensor);
    if (std::find(layers.begin(), layers.end(), r.t.layer) == layers.end()) layers.push_back(r.t.layer);
  }
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& r : s.rows)
    if (r.error.empty() && std::isfinite(r.kld) && r.kld > 0) {
      lo = std::min(lo, std::log10(r.kld));
      hi = std::max(hi, std::log10(r.kld));
    }
  if (!(hi >= lo)) lo = -6, hi = 0;
  lo = std::floor(lo);
  hi = std::max(lo + 1, std::ceil(hi));
  const double cw = 26, ch = 16, label_w = 90, head_h = 110, x0 = 10, top = 40, gap = 30;
  const double panel_w = label_w + cw * static_cast<double>(cols.size());
  const double panel_h = head_h + ch * static_cast<double>(layers.size());
  const double width = x0 + panel_w * static_cast<double>(s.specs.size()) + gap * static_cast<double>(s.specs.size()) + 10;
  const double height = top + panel_h + 70;
  // Viridis-like ramp from dark blue (small KLD) to yellow (large).
  const auto colour = [&](double kld) {
    if (!std::isfinite(kld)) return std::string("#d62728");
    if (kld <= 0) return std::string("#f0f0f0");
    const double t = std::clamp((std::log10(kld) - lo) / (hi - lo), 0.0, 1.0);
    const double stops[5][3] = {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
    const double f = t * 4;
    const int i = std::min(3, static_cast<int>(f));
    const double u = f - i;
    char buf[8];
    std::snprintf(buf, sizeof buf, "#%02x%02x%02x", static_cast<int>(stops[i][0] + u * (stops[i + 1][0] - stops[i][0])),
                  static_cast<int>(stops[i][1] + u * (stops[i + 1][1] - stops[i][1])),
                  static_cast<int>(stops[i][2] + u * (stops[i + 1][2] - stops[i][2])));
    return std::string(buf);
  };
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" font-family=\"sans-serif\" font-size=\"10\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << x0 << "\" y=\"18\" font-size=\"14\" font-weight=\"bold\">lowp sensitivity: "
      << xml_text(s.sweep.model) << ", KLD from " << xml_text(s.sweep.reference) << " with one tensor quantized</text>\n";
  std::map<std::pair<std::string, std::pair<int, std::string>>, const SensitivityRow*> at;
  for (const auto& r : s.rows) at[{r.spec, {r.t.layer, r.t.tensor}}] = &r;
  for (std::size_t p = 0; p < s.specs.size(); ++p) {
    const double px = x0 + static_cast<double>(p) * (panel_w + gap), gx = px + label_w, gy = top + head_h;
    out << "<text x=\"" << px << "\" y=\"" << top + 12 << "\" font-weight=\"bold\" font-size=\"12\">"
        << xml_text(s.specs[p]) << "</text>\n";
    for (std::size_t c = 0; c < cols.size(); ++c) {
      const double cx = gx + (static_cast<double>(c) + 0.6) * cw;
      out << "<text transform=\"translate(" << cx << "," << gy - 4 << ") rotate(-60)\">" << xml_text(cols[c])
          << "</text>\n";
    }
    for (std::size_t l = 0; l < layers.size(); ++l) {
      const double y = gy + static_cast<double>(l) * ch;
      out << "<text x=\"" << gx - 4 << "\" y=\"" << y + ch - 4 << "\" text-anchor=\"end\">"
          << (layers[l] < 0 ? std::string("classifier") : "layer " + std::to_string(layers[l])) << "</text>\n";
      for (std::size_t c = 0; c < cols.size(); ++c) {
        const auto it = at.find({s.specs[p], {layers[l], cols[c]}});
        if (it == at.end()) continue;
        const SensitivityRow& r = *it->second;
        const double v = r.error.empty() ? r.kld : NAN;
        out << "<rect x=\"" << gx + static_cast<double>(c) * cw << "\" y=\"" << y << "\" width=\"" << cw - 1
            << "\" height=\"" << ch - 1 << "\" fill=\"" << colour(v) << "\"><title>" << xml_text(r.t.key()) << " @ "
            << xml_text(r.spec) << ": "
            << (r.error.empty() ? "KLD " + fixed("%.4g", r.kld) + ", dln PPL " + fixed("%.4g", r.dlnppl)
                                : "failed: " + r.error)
            << "</title></rect>\n";
      }
    }
  }
  // Colour scale.
  const double ly = top + panel_h + 20;
  out << "<text x=\"" << x0 << "\" y=\"" << ly + 10 << "\">log10 KLD (nats/token):</text>\n";
  for (int i = 0; i <= 20; ++i) {
    const double v = lo + (hi - lo) * i / 20.0;
    out << "<rect x=\"" << x0 + 140 + i * 12 << "\" y=\"" << ly << "\" width=\"12\" height=\"12\" fill=\""
        << colour(std::pow(10.0, v)) << "\"/>\n";
  }
  out << "<text x=\"" << x0 + 140 << "\" y=\"" << ly + 26 << "\">" << fixed("%.0f", lo) << "</text><text x=\""
      << x0 + 140 + 20 * 12 << "\" y=\"" << ly + 26 << "\">" << fixed("%.0f", hi)
      << "</text><text x=\"" << x0 + 420 << "\" y=\"" << ly + 10
      << "\">red: NaN or failed; grey: KLD 0. Hover a cell for its numbers.</text>\n</svg>\n";
}

}  // namespace lowp::accuracy
