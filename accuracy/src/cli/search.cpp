// `lowp search`: the mixed-precision search (lowp/accuracy/search.hpp) from per-tensor
// sensitivities on calibration text, its recipe files, and their check on held-out text.
#include <climits>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "io/gguf_bits.hpp"
#include "lowp/accuracy/base_logits.hpp"
#include "lowp/accuracy/metrics.hpp"
#include "dist/comm.hpp"
#include "file/atomic_file.hpp"
#include "lowp/accuracy/loaders.hpp"
#include "lowp/accuracy/model_sweep.hpp"
#include "lowp/accuracy/search.hpp"
#include "lowp/accuracy/sensitivity.hpp"
#include "lowp/numerics/error.hpp"
#include "report/text.hpp"
#include "sweep/report_pareto.hpp"

namespace lowp::cli {
namespace {

using accuracy::report::fixed;

struct SearchArgs {
  std::string model, text, tokens, eval, out, plot, csv, bos = "auto", max_memory;
  std::vector<std::string> menu, activations, budget;
  std::vector<std::string> base_logits;  // GGUF=LOGITS: llama.cpp's quantized model and its logits of --eval
  std::string calibrate = "none";        // weights.calibrate of every recipe (with --calib)
  CalibArgs calib;
  std::optional<int> ctx;
  int threads = 0;
};

// --activations: one spec for every linear input inside the layers, or kind=SPEC entries.
accuracy::Recipe base_recipe(const std::vector<std::string>& activations) {
  std::string text = "name = search-base\n";
  for (const auto& a : activations) {
    const std::size_t eq = a.find('=');
    text += eq == std::string::npos ? "act = " + a + "\n" : "act." + a.substr(0, eq) + " = " + a.substr(eq + 1) + "\n";
  }
  try {
    return accuracy::parse_recipe(text);
  } catch (const Error& e) {
    throw Failure{exit_usage, std::string("--activations: ") + e.what()};
  }
}

// Held-out means disjoint: no run of k consecutive tokens (64, or the shorter text's length)
// of the evaluation text occurs in the calibration text.
// `what` names the calibration text in the message.
void check_disjoint(const std::vector<int>& calib, const std::vector<int>& eval, const std::string& what) {
  const std::string o = first_overlap(calib, eval);
  if (!o.empty()) throw Failure{exit_usage, "--eval overlaps " + what + " (" + o + "): evaluate on held-out text"};
}

// recipe.txt for one budget; recipe-<budget>.txt for each of several.
std::string out_path(const std::string& out, const std::string& budget, bool several) {
  if (!several) return out;
  const std::filesystem::path p(out);
  return (p.parent_path() / (p.stem().string() + "-" + budget + p.extension().string())).string();
}

using Point = accuracy::ParetoPoint;
using accuracy::write_pareto_svg;

// --csv: one line per point, in the table's order (columns in docs/sweep.md); numbers exact,
// the measured columns nan without --eval and the predicted one nan for llama.cpp's files.
void write_search_csv(std::ostream& out, const std::vector<Point>& pts) {
  using accuracy::report::csv_field;
  using accuracy::report::exact;
  out << "recipe,kind,bits_per_weight,predicted_kld,kld_mean,kld_se,ln_ppl_ratio,file\n";
  for (const auto& p : pts)
    out << csv_field(p.name) << ',' << (p.searched ? "searched" : p.llama_cpp ? "llama.cpp" : "uniform") << ','
        << exact(p.bpw) << ',' << exact(p.predicted) << ',' << exact(p.measured) << ',' << exact(p.measured_se) << ','
        << exact(p.dlnppl) << ',' << csv_field(p.file) << '\n';
}


// The chart and the CSV, each written atomically when asked for.
void write_outputs(const SearchArgs& a, const std::vector<Point>& pts) {
  if (!a.plot.empty()) accuracy::detail::write_file_atomic(a.plot, [&](std::ostream& f) { write_pareto_svg(f, pts, a.model); });
  if (!a.csv.empty()) accuracy::detail::write_file_atomic(a.csv, [&](std::ostream& f) { write_search_csv(f, pts); });
}

int run_search(Io& io, const SearchArgs& a) {
  if (a.text.empty() == a.tokens.empty()) throw Failure{exit_usage, "search needs exactly one of --text and --tokens"};
  std::vector<double> budgets;
  std::vector<quant::QuantSpec> menu;
  try {
    for (const auto& s : a.menu) menu.push_back(quant::parse_quant_spec(s));
  } catch (const Error& e) {
    throw Failure{exit_usage, std::string("--menu: ") + e.what()};
  }
  for (const auto& b : a.budget) {
    char* end = nullptr;
    const double v = std::strtod(b.c_str(), &end);
    if (b.empty() || *end || !(v > 0) || !std::isfinite(v))
      throw Failure{exit_usage, "--budget " + quote_input(b) + " is not a positive number of bits per weight"};
    budgets.push_back(v);
  }
  accuracy::Recipe base = base_recipe(a.activations);
  if (a.calibrate != "none") {
    try {
      base.calibrate = accuracy::parse_recipe("name = x\nweights.calibrate = " + a.calibrate + "\n").calibrate;
    } catch (const Error&) {
      throw Failure{exit_usage, "--calibrate " + quote_input(a.calibrate) + ": imatrix, gptq or awq"};
    }
    if (a.calib.calib.empty() && a.calib.imatrix.empty())
      throw Failure{exit_usage, "--calibrate needs the calibration text of the weights: --calib FILE"};
  }
  apply_max_memory(a.max_memory);
  const std::string path = accuracy::resolve_model_path(a.model);
  const accuracy::LlamaModel model = accuracy::load_model(path, accuracy::WeightStorage::mapped);
  // The budgets against the menu's bits alone, before any evaluation.
  {
    std::vector<accuracy::SearchTensor> shapes;
    for (const auto& t : accuracy::sensitivity_tensors(model.config, true)) {
      accuracy::SearchTensor s{t, {}};
      for (std::size_t i = 0; i < menu.size(); ++i) try {
          s.options.push_back({a.menu[i], accuracy::weight_bits(menu[i], t.rows, t.cols), 0});
        } catch (const Error&) {  // the spec does not fit this shape
        }
      if (s.options.empty())
        throw Failure{exit_usage, "--menu: no spec fits " + t.key() + " (" + std::to_string(t.rows) + "x" +
                                      std::to_string(t.cols) + "); add one, or `:pad` to a block spec"};
      shapes.push_back(std::move(s));
    }
    try {
      for (double b : budgets) accuracy::solve_search(shapes, b, 0);
    } catch (const Error& e) {
      std::string why = e.what();
      if (why.starts_with("search: ")) why = "--" + why.substr(8);  // "--budget 4 bits per weight is below ..."
      throw Failure{exit_usage, why};
    }
  }
  const auto calib = read_eval_tokens(a.tokens, a.text, path, model.config.vocab_size, a.bos);
  std::optional<EvalTokens> held;
  if (!a.eval.empty()) {
    std::error_code ec;
    if (std::filesystem::equivalent(a.eval, a.text.empty() ? a.tokens : a.text, ec))
      throw Failure{exit_usage, "--eval is the calibration file: evaluate on held-out text"};
    held = read_eval_tokens(a.text.empty() ? a.eval : "", a.text.empty() ? "" : a.eval, path, model.config.vocab_size,
                            a.bos);
    check_disjoint(calib.ids, held->ids, "the calibration text");
  }
  accuracy::EvalOptions opt;
  opt.ctx = a.ctx.value_or(0);
  opt.threads = a.threads;
  opt.bos = calib.window_bos;
  opt.calib = calibration_text(a.calib, path, model.config.vocab_size, a.bos, io.err);
  if (opt.calib && held) check_disjoint(opt.calib->tokens, held->ids, "the --calib text");
  std::ostream null_stream(nullptr);
  check_ctx_option(a.ctx, model.config.seq_len, accuracy::dist::rank() == 0 ? io.err : null_stream);
  const bool root = accuracy::dist::rank() == 0;
  accuracy::Sensitivity sens = accuracy::run_sensitivity(model, calib.ids, a.menu, opt, {}, nullptr, &base, true);

  // Rank 0 solves; every rank then evaluates the same recipes (their text broadcast).
  std::vector<Point> points;
  std::string texts;
  if (root) {
    const auto tensors = accuracy::search_options(sens);
    io.out << "lowp search: " << a.model << ", " << tensors.size() << " weight tensors, menu";
    for (const auto& s : a.menu) io.out << ' ' << s;
    io.out << "\n  sensitivities on " << sens.sweep.scored << " calibration positions";
    if (!base.is_identity()) io.out << "; activations kept quantized (base KLD " << fixed("%.4e", sens.base_cmp.kld_mean) << ")";
    io.out << "\n  predicted KLD = base KLD + the sum of each tensor's KLD when it alone is quantized (additive estimate)\n";
    for (std::size_t i = 0; i < budgets.size(); ++i) {
      const auto plan = accuracy::solve_search(tensors, budgets[i], sens.base_cmp.kld_mean);
      const std::string name = "search-" + a.budget[i];
      const accuracy::Recipe r = accuracy::search_recipe(tensors, plan, base, name);
      const std::string file = out_path(a.out, a.budget[i], budgets.size() > 1);
      accuracy::detail::write_file_atomic(file, accuracy::to_text(r));
      io.out << "budget " << a.budget[i] << ": " << fixed("%.4f", plan.bits_per_weight()) << " bits per weight, predicted KLD "
             << fixed("%.4e", plan.predicted) << (plan.exact ? " (exact optimum" : " (optimal on a grid of ")
             << (plan.exact ? "" : std::to_string(plan.unit) + " bits") << ") -> " << file << "\n";
      points.push_back({name, plan.bits_per_weight(), plan.predicted, NAN, NAN, NAN, true, false, file});
      texts += accuracy::to_text(r) + '\x1e';
    }
    // The uniform recipes of the menu: each spec on every weight it fits.
    for (std::size_t j = 0; j < a.menu.size(); ++j) {
      const auto plan = accuracy::uniform_plan(tensors, a.menu[j], sens.base_cmp.kld_mean);
      if (!plan) continue;
      const accuracy::Recipe r = accuracy::search_recipe(tensors, *plan, base, "uniform " + a.menu[j]);
      points.push_back({r.name, plan->bits_per_weight(), plan->predicted, NAN, NAN, NAN, false, false, ""});
      texts += accuracy::to_text(r) + '\x1e';
    }
  }
  if (!held && !a.base_logits.empty()) throw Failure{exit_usage, "--base-logits needs --eval (the tokens the logits are of)"};
  if (!held) {
    if (root) io.out << "no --eval: predicted KLD only (pass held-out text to measure the recipes)\n";
    if (root) write_outputs(a, points);
    return exit_ok;
  }
  std::vector<std::uint8_t> bytes(texts.begin(), texts.end());
  if (accuracy::dist::size() > 1) accuracy::dist::broadcast(bytes, 0);
  std::vector<accuracy::Recipe> recipes;
  std::string all(bytes.begin(), bytes.end());
  for (std::size_t p = 0, q; (q = all.find('\x1e', p)) != std::string::npos; p = q + 1)
    recipes.push_back(accuracy::parse_recipe(all.substr(p, q - p)));
  accuracy::EvalOptions eopt = opt;
  eopt.bos = held->window_bos;
  const accuracy::ModelSweep measured =
      accuracy::run_model_sweep(model, held->ids, recipes, eopt, {}, nullptr, !a.base_logits.empty());
  if (!root) return exit_ok;
  for (const auto& entry : a.base_logits) {  // llama.cpp's types: their KLD against lowp's fp32 run
    const std::size_t eq = entry.find('=');
    if (eq == std::string::npos) throw Failure{exit_usage, "--base-logits " + quote_input(entry) + ": expected GGUF=LOGITS"};
    const std::string gguf = entry.substr(0, eq);
    Point p{std::filesystem::path(gguf).stem().string(), accuracy::detail::gguf_bits_per_weight(gguf, model.config), NAN,
            NAN, NAN, NAN, false, true, gguf};
    accuracy::EvalRun run;
    try {
      run = accuracy::read_logits_run(entry.substr(eq + 1), model, held->ids, eopt);
    } catch (const Error& e) {
      throw Failure{exit_usage, std::string("--base-logits: ") + e.what()};
    }
    const accuracy::Comparison c = accuracy::compare(measured.reference_run, run);
    p.measured = c.kld_mean;
    p.measured_se = c.kld_se;
    p.dlnppl = c.ln_ppl_ratio;
    points.push_back(p);
  }
  for (auto& p : points)
    for (const auto& r : measured.results)
      if (r.recipe == p.name && r.error.empty()) {
        p.measured = r.cmp.kld_mean;
        p.measured_se = r.cmp.kld_se;
        p.dlnppl = r.cmp.ln_ppl_ratio;
      }
  io.out << "\nOn the held-out text (" << measured.scored << " positions scored; fp32 PPL " << fixed("%.4f", measured.ref_ppl)
         << "):\n\n";
  std::vector<std::vector<std::string>> table = {
      {"recipe", "bits/w", "predicted KLD", "measured KLD", "+-", "measured/predicted", "dln PPL"}};
  for (const auto& p : points)
    table.push_back({p.name, fixed("%.4f", p.bpw), fixed("%.4e", p.predicted), fixed("%.4e", p.measured),
                     fixed("%.1e", p.measured_se), fixed("%.3f", p.measured / p.predicted), fixed("%.5f", p.dlnppl)});
  accuracy::report::print_table(io.out, table, {false, true, true, true, true, true, true});
  write_outputs(a, points);
  return exit_ok;
}

}  // namespace

Command add_search_command(CLI::App& parent) {
  auto a = std::make_shared<SearchArgs>();
  CLI::App* app = parent.add_subcommand(
      "search", "Mixed precision: one menu spec per weight tensor, least predicted KLD under a bits-per-weight budget");
  app->add_option("--model", a->model, "Llama checkpoint (llama2.c .bin, GGUF, safetensors)")->required();
  app->add_option("--text", a->text, "Calibration text file (the sensitivities are measured on it)");
  app->add_option("--tokens", a->tokens, "Calibration token ids, one per line");
  app->add_option("--bos", a->bos, "With --text: BOS on, off, or auto")->capture_default_str();
  app->add_option("--menu", a->menu, "Weight specs to choose from, comma-separated (e.g. mxfp4,nvfp4,e4m3:row,bf16)")
      ->delimiter(',')
      ->required();
  app->add_option("--budget", a->budget, "Average bits per weight, scales included; several (comma-separated): one "
                                         "recipe each and the Pareto chart")
      ->delimiter(',')
      ->required();
  app->add_option("--activations", a->activations,
                  "Activation quantization kept under every choice: SPEC (every linear input in the layers) or "
                  "kind=SPEC entries, comma-separated")
      ->delimiter(',');
  app->add_option("--eval", a->eval, "Held-out text (token ids with --tokens), disjoint from the calibration text: "
                                     "measure the recipes on it");
  app->add_option("--out", a->out, "Recipe file to write (several budgets: <stem>-<budget><ext> each)")->required();
  app->add_option("--plot", a->plot, "SVG chart: bits per weight against KLD, searched and uniform recipes");
  app->add_option("--csv", a->csv, "Also write the table (searched, uniform and llama.cpp rows) as CSV to this file");
  app->add_option("--calibrate", a->calibrate,
                  "weights.calibrate of every recipe (sensitivities, searched and uniform): none, imatrix, gptq or awq; "
                  "needs --calib")
      ->capture_default_str();
  add_calib_options(app, a->calib);
  app->add_option("--base-logits", a->base_logits,
                  "With --eval: llama.cpp's quantized runs as points, GGUF=LOGITS each (comma-separated): the GGUF's "
                  "bits per weight from its tensor types, LOGITS its float32 logits of the --eval tokens "
                  "[positions x vocab], in the same windows (--ctx)")
      ->delimiter(',');
  add_number_option<int>(app, "--ctx", a->ctx, INT_MIN, INT_MAX, "Window length (default: the model's seq_len)");
  add_number_option<int>(app, "--threads", a->threads, 0, max_threads, "Threads (default 0: all)");
  add_max_memory_option(app, a->max_memory);
  app->footer("Docs: docs/sweep.md, \"lowp search\". Exit status: 0 success; 1 bad data; 2 usage error.");
  return {app, [a](Io& io) { return run_search(io, *a); }};
}

}  // namespace lowp::cli
