// run_sensitivity: one recipe per (tensor, spec), each the base recipe plus that tensor, run as
// one model sweep (the model and the reference once, the recipes split across MPI ranks).
#include "lowp/accuracy/sensitivity.hpp"

#include "dist/comm.hpp"
#include "sweep/sensitivity_plan.hpp"

#include <cmath>
#include <limits>
#include <map>

#include "lowp/numerics/error.hpp"
#include "lowp/quant/quantize.hpp"

namespace lowp::accuracy {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The error-attribution points (eval.hpp) of a tensor key: its SQNR is theirs summed.
std::vector<std::string> points_of(const SensitivityTensor& t) {
  const std::string& k = t.tensor;
  if (k.starts_with("weights.")) return {k.substr(8)};
  if (k.starts_with("act.")) return {"x." + k.substr(4)};
  if (k == "kv") return {"kv.k", "kv.v"};
  return {k.substr(5)};  // attn.q -> q
}

}  // namespace

std::string SensitivityTensor::key() const {
  return layer < 0 ? tensor : "layer." + std::to_string(layer) + "." + tensor;
}

std::vector<SensitivityTensor> sensitivity_tensors(const LlamaConfig& c, bool weights_only) {
  const auto dim = static_cast<std::size_t>(c.dim), hidden = static_cast<std::size_t>(c.hidden_dim);
  const auto kv = static_cast<std::size_t>(c.kv_dim()), qd = static_cast<std::size_t>(c.q_dim());
  const std::pair<std::size_t, std::size_t> shape[] = {{qd, dim},     {kv, dim},     {kv, dim},    {dim, qd},
                                                       {hidden, dim}, {hidden, dim}, {dim, hidden}};
  std::vector<SensitivityTensor> out;
  for (int l = 0; l < c.n_layers; ++l) {
    for (std::size_t i = 0; i < 7; ++i)
      out.push_back({l, "weight", "weights." + std::string(linear_kind_name(static_cast<LinearKind>(i))),
                     shape[i].first, shape[i].second});
    if (weights_only) continue;
    for (std::size_t i = 0; i < 7; ++i)
      out.push_back({l, "act", "act." + std::string(linear_kind_name(static_cast<LinearKind>(i))), 0, 0});
    out.push_back({l, "kv", "kv", 0, 0});
    for (const char* op : {"attn.q", "attn.k", "attn.p", "attn.v"}) out.push_back({l, "attn", op, 0, 0});
  }
  out.push_back({-1, "weight", "weights.classifier", static_cast<std::size_t>(c.vocab_size), dim});
  if (!weights_only) out.push_back({-1, "act", "act.classifier", 0, 0});
  return out;
}

Recipe with_tensor(const Recipe& base, const SensitivityTensor& t, std::string_view spec, const std::string& name) {
  Recipe r = base;
  r.name = name;
  r.note = t.key() + " = " + std::string(spec);
  const std::string text = "name = x\n" + t.key() + " = " + std::string(spec) + "\n";
  const Recipe one = parse_recipe(text);  // the recipe grammar places the key (one parser for it)
  if (t.layer < 0) {
    for (std::size_t i = 0; i < linear_kind_count; ++i) {
      if (one.weights[i]) r.weights[i] = one.weights[i];
      if (one.act[i]) r.act[i] = one.act[i];
    }
    return r;
  }
  LayerSpecs& dst = r.layer[t.layer];
  const LayerSpecs& src = one.layer.at(t.layer);
  for (std::size_t i = 0; i < linear_kind_count; ++i) {
    if (src.weights[i]) dst.weights[i] = src.weights[i];
    if (src.act[i]) dst.act[i] = src.act[i];
  }
  for (auto [to, from] : {std::pair{&dst.q, &src.q}, {&dst.k, &src.k}, {&dst.p, &src.p}, {&dst.v, &src.v},
                          {&dst.kv, &src.kv}})
    if (*from) *to = *from;
  return r;
}

namespace detail {

SweepJob SensitivityPlan::job(const LlamaModel& model, std::span<const int> tokens, const EvalOptions& opt,
                              const EvalRun* base_logits, bool reuse_prefix) const {
  SweepJob j{model, tokens, recipes, opt, base_logits, false};
  if (reuse_prefix) {
    j.prefix_base = &base;
    j.resume = resume;
    j.only_resume_layer = true;
  }
  return j;
}

SensitivityPlan plan_sensitivity(const LlamaModel& model, std::span<const std::string> specs, const Recipe* base,
                                 bool weights_only) {
  if (specs.empty()) throw Error("sensitivity: no spec given");
  for (const auto& s : specs) quant::parse_quant_spec(s);  // an unknown spec fails before any run
  SensitivityPlan p;
  if (base) {
    p.base = *base;
  } else {
    p.base.name = "fp32";
  }
  const Recipe& b = p.base;
  Sensitivity& out = p.out;
  out.base = b.name;
  out.specs.assign(specs.begin(), specs.end());
  const auto tensors = sensitivity_tensors(model.config, weights_only);
  const auto n_layers = static_cast<std::size_t>(model.config.n_layers);
  for (const auto& t : tensors)
    for (const auto& s : specs) {
      SensitivityRow row;
      row.t = t;
      row.spec = s;
      p.recipes.push_back(with_tensor(b, t, s, t.key() + " @ " + s));
      // Layers before t's compute what the base computes (the classifier's: every layer).
      p.resume.push_back(t.layer < 0 ? n_layers : static_cast<std::size_t>(t.layer));
      out.rows.push_back(std::move(row));
    }
  if (!b.is_identity()) {
    p.recipes.push_back(b);
    p.resume.push_back(0);
  }
  return p;
}

Sensitivity finish_sensitivity(SensitivityPlan plan, ModelSweep sweep) {
  Sensitivity out = std::move(plan.out);
  const Recipe& b = plan.base;
  const bool with_base = !b.is_identity();
  const std::vector<Recipe>& recipes = plan.recipes;
  out.sweep = std::move(sweep);
  if (out.sweep.results.empty()) {  // another rank: rank 0 has the results
    out.rows.clear();
    return out;
  }

  std::map<std::string, const RecipeResult*> by_name;
  for (const auto& r : out.sweep.results) by_name[r.recipe] = &r;
  if (with_base) {
    const RecipeResult& r = *by_name.at(b.name);
    if (!r.error.empty()) throw Error("sensitivity: the base recipe '" + b.name + "' failed: " + r.error);
    out.base_cmp = r.cmp;
  }
  for (std::size_t i = 0; i < out.rows.size(); ++i) {
    SensitivityRow& row = out.rows[i];
    const RecipeResult& r = *by_name.at(recipes[i].name);
    row.seconds = r.seconds;
    row.error = r.error;
    row.bits_per_element = kNaN;
    if (row.t.kind == "weight") {
      try {
        row.bits_per_element = quant::bits_per_element(quant::parse_quant_spec(row.spec), row.t.rows, row.t.cols);
      } catch (const Error&) {  // a block that does not divide the tensor: the run failed too
      }
    }
    if (!row.error.empty()) {
      row.kld = row.dlnppl = row.sqnr_db = kNaN;
      continue;
    }
    row.cmp = r.cmp;
    row.kld = r.cmp.kld_mean - out.base_cmp.kld_mean;
    row.dlnppl = r.cmp.ln_ppl_ratio - out.base_cmp.ln_ppl_ratio;
    double signal = 0, noise = 0;
    for (const auto& p : points_of(row.t))
      for (const auto& e : r.tensor_errors)
        if (e.layer == row.t.layer && e.point == p) signal += e.signal, noise += e.noise;
    TensorError e;
    e.signal = signal;
    e.noise = noise;
    row.sqnr_db = e.sqnr_db();
  }
  return out;
}

}  // namespace detail

Sensitivity run_sensitivity(const LlamaModel& model, std::span<const int> tokens, std::span<const std::string> specs,
                            const EvalOptions& opt, const SweepProgress& progress, const EvalRun* base_logits,
                            const Recipe* base, bool weights_only) {
  detail::SensitivityPlan plan = detail::plan_sensitivity(model, specs, base, weights_only);
  ModelSweep sweep = detail::run_split(plan.job(model, tokens, opt, base_logits, true), dist::size(), progress);
  return detail::finish_sensitivity(std::move(plan), std::move(sweep));
}

}  // namespace lowp::accuracy
