// lowp.eval and lowp.sweep: a Llama checkpoint evaluated under recipes, results as Python
// dicts (the sweep's keys are the CSV's columns, docs/sweep.md).
#include <cmath>
#include <optional>
#include <variant>

#include "common.hpp"
#include "lowp/accuracy/calibrate.hpp"
#include "lowp/accuracy/eval.hpp"
#include "lowp/accuracy/eval_text.hpp"
#include "lowp/accuracy/loaders.hpp"
#include "lowp/accuracy/metrics.hpp"
#include "lowp/accuracy/model_sweep.hpp"
#include "lowp/accuracy/recipe.hpp"
#include "lowp/accuracy/tokenizer.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::python {
namespace {

using namespace lowp::accuracy;

accuracy::Recipe recipe_arg(const std::string& name) {
  try {
    return find_recipe(name);
  } catch (const Error& e) {
    throw py::value_error(e.what());
  }
}

// Token ids from exactly one of: `tokens` (a sequence of ids, or the path of a token file, one
// id a line) and `text` (the text itself, tokenized with the model's tokenizer and BOS as `lowp
// eval --text --bos` does: eval_text_tokens). `window_bos` gets the id each window starts with.
std::vector<int> tokens_arg(const py::object& tokens, const std::optional<std::string>& text,
                            const std::string& model_path, int vocab, const std::string& bos, int& window_bos) {
  window_bos = -1;
  if (tokens.is_none() == !text.has_value())
    throw py::value_error("exactly one of tokens= and text= is required");
  if (bos != "on" && bos != "off" && bos != "auto") throw py::value_error("bos is 'on', 'off' or 'auto', not '" + bos + "'");
  if (text) {
    if (text->empty()) throw py::value_error("text= is empty");
    py::gil_scoped_release nogil;
    EvalText t;
    try {
      t = eval_text_tokens(*text, model_path, vocab, bos);
    } catch (const NoTokenizer& e) {  // the advice `lowp eval` gives, in Python's terms
      throw Error(std::string(e.what()) + ": give token ids with tokens=");
    }
    window_bos = t.window_bos;
    return std::move(t.ids);
  }
  if (bos != "auto") throw py::value_error("bos= applies to text=; tokens= are used as given (as `lowp eval --tokens`)");
  if (py::isinstance<py::str>(tokens)) return read_token_file(tokens.cast<std::string>(), vocab);
  const auto ids = py::array_t<long long, py::array::c_style | py::array::forcecast>::ensure(tokens);
  if (!ids || ids.ndim() != 1) throw py::value_error("tokens= must be a 1-D sequence of token ids or a file path");
  std::vector<int> out(static_cast<std::size_t>(ids.size()));
  for (std::size_t i = 0; i < out.size(); ++i) {
    const long long t = ids.data()[i];
    if (t < 0 || t >= vocab)
      throw Error("tokens[" + std::to_string(i) + "] = " + std::to_string(t) + " is outside the vocabulary [0, " +
                  std::to_string(vocab) + ")");
    out[i] = static_cast<int>(t);
  }
  return out;
}

EvalOptions options_arg(std::optional<int> ctx, bool score_all, int threads) {
  EvalOptions o;
  if (ctx && *ctx <= 0) throw py::value_error("ctx must be positive, not " + std::to_string(*ctx));
  if (threads < 0) throw py::value_error("threads must be >= 0, not " + std::to_string(threads));
  o.ctx = ctx.value_or(0);
  o.score_all = score_all;
  o.threads = threads;
  return o;
}

py::list tensor_errors(const std::vector<TensorError>& errs) {
  py::list out;
  for (const TensorError& e : errs) {
    py::dict d;
    d["layer"] = e.layer;
    d["point"] = e.point;
    d["sqnr_db"] = e.sqnr_db();
    d["values"] = e.count;
    d["nonfinite"] = e.nonfinite;
    out.append(d);
  }
  return out;
}

// calib_tokens= / calib_text=: the calibration text of recipes with weights.calibrate or static
// scales (`--calib FILE` of the CLI), given and tokenized as tokens= / text= are (the same bos=);
// not cached on disk. A recipe that needs it and has none: ValueError naming the key.
std::shared_ptr<const CalibrationText> calib_arg(const std::vector<accuracy::Recipe>& recipes, const py::object& tokens,
                                                 const std::optional<std::string>& text, const std::string& model_path,
                                                 int vocab, const std::string& bos) {
  std::shared_ptr<CalibrationText> t;
  if (!tokens.is_none() || text) {
    t = std::make_shared<CalibrationText>();
    t->tokens = tokens_arg(tokens, text, model_path, vocab, text ? bos : std::string("auto"), t->bos);
  }
  for (const accuracy::Recipe& r : recipes)
    if (const std::string key = missing_calibration(r, t.get()); !key.empty())
      throw py::value_error("recipe '" + r.name + "' has " + key + ": give the calibration text with calib_text= or calib_tokens=");
  return t;
}

// The model argument as `lowp eval --model` takes it: a path or a built-in name (shakespeare).
std::string model_arg(const std::string& name_or_path) {
  try {
    return resolve_model_path(name_or_path);
  } catch (const Error& e) {
    throw py::value_error(e.what());
  }
}

py::dict eval(const std::string& model_name, const py::object& tokens, const std::optional<std::string>& text,
              const std::string& recipe_name, std::optional<int> ctx, bool score_all, int threads,
              const std::string& bos, const py::object& calib_tokens, const std::optional<std::string>& calib_text) {
  const accuracy::Recipe recipe = recipe_arg(recipe_name);
  EvalOptions opt = options_arg(ctx, score_all, threads);
  const std::string model_path = model_arg(model_name);
  LlamaModel model;
  {
    py::gil_scoped_release nogil;
    model = load_model(model_path, WeightStorage::mapped);
  }
  const std::vector<int> ids = tokens_arg(tokens, text, model_path, model.config.vocab_size, bos, opt.bos);
  opt.calib = calib_arg({recipe}, calib_tokens, calib_text, model_path, model.config.vocab_size, bos);
  EvalRun run;
  {
    py::gil_scoped_release nogil;
    run = evaluate(model, ids, recipe, opt);
  }
  const std::size_t finite = run.scored() - run.nonfinite;
  const double nll = finite ? run.nll_sum / static_cast<double>(finite) : NAN;
  py::dict d;
  d["model"] = model_path;
  d["recipe"] = recipe.name;
  d["tokens"] = ids.size();
  d["scored"] = run.scored();
  d["mean_nll"] = nll;
  d["ppl"] = std::exp(nll);
  d["nonfinite"] = run.nonfinite;
  d["layers"] = tensor_errors(run.tensor_errors);
  return d;
}

py::list sweep(const std::string& model_name, const py::object& tokens, const std::optional<std::string>& text,
               const std::optional<std::vector<std::string>>& recipe_names, std::optional<int> ctx, bool score_all,
               int threads, const std::string& bos, const py::object& calib_tokens,
               const std::optional<std::string>& calib_text) {
  std::vector<accuracy::Recipe> recipes;
  for (const std::string& n : recipe_names ? *recipe_names : default_sweep_recipes()) recipes.push_back(recipe_arg(n));
  if (recipes.empty()) throw py::value_error("recipes= is empty");
  EvalOptions opt = options_arg(ctx, score_all, threads);
  const std::string model_path = model_arg(model_name);
  LlamaModel model;
  {
    py::gil_scoped_release nogil;
    model = load_model(model_path, WeightStorage::mapped);
  }
  const std::vector<int> ids = tokens_arg(tokens, text, model_path, model.config.vocab_size, bos, opt.bos);
  opt.calib = calib_arg(recipes, calib_tokens, calib_text, model_path, model.config.vocab_size, bos);
  ModelSweep s;
  {
    py::gil_scoped_release nogil;
    s = run_model_sweep(model, ids, recipes, opt);
  }
  py::list out;
  for (const RecipeResult& r : s.results) {
    const Comparison& c = r.cmp;
    const bool ok = r.error.empty();
    auto num = [&](double v) -> py::object { return ok ? py::cast(v) : py::none(); };
    py::dict d;  // the CSV's columns, in its order
    d["recipe"] = r.recipe;
    d["ppl"] = num(c.ppl);
    d["ppl_se"] = num(c.ppl_se);
    d["ln_ppl_ratio"] = num(c.ln_ppl_ratio);
    d["ln_ppl_ratio_se"] = num(c.ln_ppl_ratio_se);
    d["kld_mean"] = num(c.kld_mean);
    d["kld_se"] = num(c.kld_se);
    d["kld_median"] = num(c.kld_median);
    d["kld_p99"] = num(c.kld_p99);
    d["kld_max"] = num(c.kld_max);
    d["dp_mean"] = num(c.dp_mean);
    d["dp_rms"] = num(c.dp_rms);
    d["same_top1_pct"] = num(c.same_top1);
    d["tokens"] = c.tokens;
    d["nonfinite"] = c.nonfinite;
    d["seconds"] = r.seconds;
    d["error"] = r.error;
    out.append(d);
  }
  return out;
}

}  // namespace

void bind_accuracy(py::module_& m) {
  m.def("eval", &eval, py::arg("model"), py::arg("tokens") = py::none(), py::arg("text") = py::none(),
        py::arg("recipe") = "fp32", py::arg("ctx") = py::none(), py::arg("score_all") = false, py::arg("threads") = 0,
        py::arg("bos") = "auto", py::arg("calib_tokens") = py::none(), py::arg("calib_text") = py::none(),
        "Teacher-forced evaluation of a checkpoint (llama2.c .bin, GGUF, safetensors, or a built-in name such as\n"
        "'shakespeare') under a recipe, as `lowp eval`, with its numbers. tokens: a sequence of ids or a token\n"
        "file path (used as given); text: the text itself, BOS first as bos= says ('auto': the tokenizer's\n"
        "add_bos, as `lowp eval --bos auto`; 'on'; 'off'). calib_tokens / calib_text: the calibration text of a\n"
        "recipe with weights.calibrate or static scales (`--calib`), taken as tokens / text are; not cached.\n"
        "Returns a dict:\n"
        "model, recipe, tokens, scored, mean_nll, ppl, nonfinite, layers (SQNR per quantization point).");
  m.def("sweep", &sweep, py::arg("model"), py::arg("tokens") = py::none(), py::arg("text") = py::none(),
        py::arg("recipes") = py::none(), py::arg("ctx") = py::none(), py::arg("score_all") = false,
        py::arg("threads") = 0, py::arg("bos") = "auto", py::arg("calib_tokens") = py::none(),
        py::arg("calib_text") = py::none(),
        "The model sweep of `lowp sweep --model`: the fp32 reference, then each recipe (default: the CLI's\n"
        "list), sorted by mean KLD; calib_tokens / calib_text as in eval(). Returns one dict per recipe with\n"
        "the CSV's columns (docs/sweep.md).");
}

}  // namespace lowp::python
