// `lowp eval`: teacher-forced evaluation of a Llama checkpoint under one recipe.
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <span>
#include <iterator>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/recipe_option.hpp"
#include "dist/comm.hpp"
#include "lowp/accuracy/base_logits.hpp"
#include "lowp/accuracy/eval.hpp"
#include "lowp/accuracy/loaders.hpp"
#include "lowp/accuracy/metrics.hpp"
#include "lowp/accuracy/tokenizer.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::cli {
namespace {

struct EvalArgs {
  std::string model, text, tokens, recipe = "fp32", logits_out, bos = "auto", max_memory;
  std::optional<int> ctx;
  int threads = 0;
  bool score_all = false, layers = false;
  CalibArgs calib;
};

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// weights.calibrate needs --calib (or --imatrix), static scales --calib; calibrating on the
// evaluation text is allowed here with a warning (`lowp search` refuses it).
void check_calibration(const accuracy::Recipe& r, const accuracy::EvalOptions& opt, const std::vector<int>& tokens,
                       std::ostream& err) {
  require_calibration(r, opt.calib.get());
  if (!r.needs_calibration()) return;
  if (r.calibrate.method != accuracy::CalibMethod::none) {
    if (r.quarot || !r.linear.empty())
      throw Failure{exit_usage, "recipe '" + r.name + "': weights.calibrate does not combine with " +
                                    (r.quarot ? std::string("quarot = on") : "linear = " + r.linear) +
                                    " (docs/calibration.md)"};
    if (opt.calib->tokens.empty() && r.calibrate.method != accuracy::CalibMethod::imatrix)
      throw Failure{exit_usage, "--imatrix is for weights.calibrate = imatrix; give --calib FILE"};
  }
  warn_if_overlap(opt.calib->tokens, tokens, err);
}

int run_eval(Io& io, const EvalArgs& a) {
  if (a.text.empty() == a.tokens.empty()) throw Failure{exit_usage, "exactly one of --text and --tokens is required"};
  const accuracy::Recipe recipe = recipe_option(a.recipe, "eval", io.err);
  // Under mpirun rank 0 alone evaluates (one recipe: `lowp sweep` is the command that splits).
  if (accuracy::dist::rank() != 0) return exit_ok;
  apply_max_memory(a.max_memory);
  const std::string path = accuracy::resolve_model_path(a.model);
  const accuracy::LlamaModel model = accuracy::load_model(path, accuracy::WeightStorage::mapped);
  check_ctx_option(a.ctx, model.config.seq_len, io.err);
  const auto [tokens, window_bos] = read_eval_tokens(a.tokens, a.text, path, model.config.vocab_size, a.bos);

  accuracy::EvalOptions opt;
  opt.ctx = a.ctx.value_or(0);
  opt.bos = window_bos;
  opt.score_all = a.score_all;
  opt.keep_logits = !a.logits_out.empty();
  opt.keep_log_probs = !recipe.is_identity();  // only the comparison with the reference reads them
  opt.threads = a.threads;
  opt.calib = calibration_text(a.calib, path, model.config.vocab_size, a.bos, io.err);
  check_calibration(recipe, opt, tokens, io.err);
  // A recipe that quantizes anything is compared with the fp32 reference, as in `lowp sweep`.
  std::optional<accuracy::EvalRun> reference;
  if (!recipe.is_identity()) {
    accuracy::EvalOptions ref_opt = opt;
    ref_opt.keep_logits = false;
    reference = accuracy::evaluate(model, tokens, accuracy::find_recipe("fp32"), ref_opt);
  }
  const accuracy::EvalRun run = accuracy::evaluate(model, tokens, recipe, opt);
  if (!a.logits_out.empty()) accuracy::write_logits(a.logits_out, run.logits);

  const std::size_t finite = run.scored() - run.nonfinite;
  const double nll = finite ? run.nll_sum / static_cast<double>(finite) : NAN;
  io.out << "model     " << a.model << " (" << model.config.n_layers << " layers, dim " << model.config.dim
         << ", vocab " << model.config.vocab_size << ")\n"
         << "recipe    " << recipe.name << "\n";
  if (recipe.calibrate.method != accuracy::CalibMethod::none)
    io.out << "calibrate " << accuracy::calib_method_name(recipe.calibrate.method) << " on "
           << (a.calib.imatrix.empty() ? a.calib.calib + " (" + std::to_string(opt.calib->tokens.size()) + " tokens)"
                                        : a.calib.imatrix + " (llama.cpp's importance matrix)")
           << "\n";
  if (recipe.static_scales() && !recipe.is_identity())
    io.out << "scales    act " << accuracy::scale_source_text(recipe.act_scale) << ", attn "
           << accuracy::scale_source_text(recipe.attn_scale) << " on " << a.calib.calib << " ("
           << opt.calib->tokens.size() << " tokens)\n";
  io.out
         << "tokens    " << tokens.size() << "\n"
         << "scored    " << run.scored() << (a.score_all ? " (every position)\n" : " (second half of each window)\n")
         << "mean NLL  " << fixed(nll, 6) << "\n"
         << "PPL       " << fixed(std::exp(nll), 4) << "\n";
  if (run.nonfinite) io.out << "nonfinite " << run.nonfinite << " scored positions had NaN/Inf logits (excluded)\n";
  if (reference) {
    // The comparison of `lowp sweep`, on the positions both runs scored with finite logits.
    const accuracy::Comparison c = accuracy::compare(*reference, run);
    io.out << "PPL_ref   " << fixed(c.ref_ppl, 4) << " (fp32 reference, same tokens)\n"
           << "ln(PPL/PPL_ref) " << fixed(c.ln_ppl_ratio, 6) << " +- " << fixed(c.ln_ppl_ratio_se, 6) << "\n"
           << "mean KLD  " << fixed(c.kld_mean, 6) << " +- " << fixed(c.kld_se, 6) << "\n"
           << "same top1 " << fixed(c.same_top1, 2) << " %\n";
  }
  if (a.layers && !run.tensor_errors.empty()) {
    io.out << "\nlayer  point        SQNR dB   nonfinite\n";
    for (const auto& e : run.tensor_errors) {
      char line[128];
      std::snprintf(line, sizeof line, "%-6s %-10s %9.2f %11zu\n", e.layer < 0 ? "-" : std::to_string(e.layer).c_str(),
                    e.point.c_str(), e.sqnr_db(), e.nonfinite);
      io.out << line;
    }
  }
  return exit_ok;
}

}  // namespace

Command add_eval_command(CLI::App& parent) {
  auto a = std::make_shared<EvalArgs>();
  CLI::App* app = parent.add_subcommand("eval", "Teacher-forced evaluation of a Llama checkpoint: mean NLL and perplexity");
  app->add_option("--model", a->model, "Llama checkpoint: llama2.c .bin, GGUF, or safetensors (+ config.json)")->required();
  app->add_option("--text", a->text,
                  "Text file, tokenized with the model's tokenizer (GGUF's own, or tokenizer.bin, tokenizer.json "
                  "or tokenizer.model beside the model)");
  app->add_option("--tokens", a->tokens, "Token ids, one per line");
  app->add_option("--bos", a->bos, "With --text: BOS on, off, or auto (the tokenizer's add_bos_token)")->capture_default_str();
  app->add_option("--recipe", a->recipe, "Built-in recipe name (`lowp recipes`) or recipe file")->capture_default_str();
  add_number_option<int>(app, "--ctx", a->ctx, INT_MIN, INT_MAX,
                         "Window length in [2, 1048576] (default: the model's seq_len, or the token count if smaller; "
                         "past seq_len with a warning)");
  app->add_option("--logits-out", a->logits_out, "Write float32 little-endian logits [positions x vocab] to this file");
  app->add_flag("--score-all", a->score_all, "Score every position, not the second half of each window");
  app->add_flag("--layers", a->layers, "Also print the SQNR of every quantized tensor at every layer");
  add_number_option<int>(app, "--threads", a->threads, 0, max_threads, "Threads (default 0: all)");
  add_max_memory_option(app, a->max_memory);
  add_calib_options(app, a->calib);
  app->footer(
      "Windows of --ctx tokens each start at position 0; as llama.cpp's perplexity tool, the\n"
      "second half of each window is scored unless --score-all (unlike it, a trailing partial\n"
      "window is scored too). With --text and BOS on, the text starts with BOS and each window's\n"
      "first token is replaced by BOS, as llama.cpp does. Row t of --logits-out holds the\n"
      "logits after feeding token t. Recipe format: docs/recipes.md.\n"
      "A recipe that quantizes anything (not fp32) also runs the fp32 reference on the same\n"
      "tokens and prints PPL_ref, ln(PPL/PPL_ref), mean KLD and same top1 %, as `lowp sweep`.\n"
      "Exit status: 0 success; 1 bad data (model, tokens); 2 usage error (options, recipe).");
  return {app, [a](Io& io) { return run_eval(io, *a); }};
}

}  // namespace lowp::cli
