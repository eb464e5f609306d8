// --calib, --imatrix, --calib-cache: the calibration text of weights.calibrate recipes
// (docs/calibration.md), shared by eval, sweep and search.
#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <unordered_set>

#include "cli/command.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::cli {
namespace {

// What identifies the model file in the cache key: its canonical path, size and modification
// time (hashing a multi-gigabyte checkpoint on every run would cost more than calibrating).
std::string file_identity(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(path, ec);
  const auto size = fs::file_size(p, ec);
  const auto mtime = fs::last_write_time(p, ec).time_since_epoch().count();
  return p.string() + " size " + std::to_string(ec ? 0 : size) + " mtime " + std::to_string(mtime);
}

// $XDG_CACHE_HOME/lowp/calib, else $HOME/.cache/lowp/calib; empty when neither is set.
std::string default_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/lowp/calib";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/lowp/calib";
  return {};
}

}  // namespace

void add_calib_options(CLI::App* app, CalibArgs& a) {
  app->add_option("--calib", a.calib,
                  "Calibration text (tokenized as the evaluation text) for recipes with weights.calibrate = "
                  "imatrix | gptq | awq or act.scale / attn.scale = static");
  app->add_option("--imatrix", a.imatrix,
                  "weights.calibrate = imatrix: llama.cpp's importance matrix (.dat) instead of computing one from "
                  "--calib");
  app->add_option("--calib-cache", a.cache,
                  "Directory caching calibrated weights and static scales (default $XDG_CACHE_HOME/lowp/calib or "
                  "~/.cache/lowp/calib)");
}

void require_calibration(const accuracy::Recipe& r, const accuracy::CalibrationText* text) {
  const std::string key = accuracy::missing_calibration(r, text);
  if (key.empty()) return;
  throw Failure{exit_usage, "recipe '" + r.name + "' has " + key + ": give the calibration text with --calib FILE" +
                                (key.starts_with("weights.") ? "" : " (the scales are cached per text)")};
}

std::shared_ptr<const accuracy::CalibrationText> calibration_text(const CalibArgs& a, const std::string& model_path,
                                                                  int vocab, const std::string& bos, std::ostream& err) {
  if (a.calib.empty() && a.imatrix.empty()) return nullptr;
  auto t = std::make_shared<accuracy::CalibrationText>();
  if (!a.calib.empty()) {
    const EvalTokens tok = read_eval_tokens("", a.calib, model_path, vocab, bos);
    t->tokens = tok.ids;
    t->bos = tok.window_bos;
  }
  if (!a.imatrix.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(a.imatrix, ec)) throw Failure{exit_usage, "--imatrix " + a.imatrix + ": no such file"};
    t->imatrix_file = a.imatrix;
  }
  t->model_id = file_identity(model_path);
  t->cache_dir = a.cache.empty() ? default_cache_dir() : a.cache;
  t->warn = [&err](const std::string& m) { err << "warning: " << m << "\n"; };
  return t;
}

std::string first_overlap(const std::vector<int>& calib, const std::vector<int>& eval) {
  const std::size_t k = std::min<std::size_t>({64, calib.size(), eval.size()});
  if (k == 0) return {};
  const auto key = [&](const std::vector<int>& v, std::size_t i) {
    return std::string(reinterpret_cast<const char*>(v.data() + i), k * sizeof(int));
  };
  std::unordered_set<std::string> seen;
  for (std::size_t i = 0; i + k <= calib.size(); ++i) seen.insert(key(calib, i));
  for (std::size_t i = 0; i + k <= eval.size(); ++i)
    if (seen.count(key(eval, i)))
      return std::to_string(k) + " consecutive tokens in common from evaluation token " + std::to_string(i);
  return {};
}

void warn_if_overlap(const std::vector<int>& calib, const std::vector<int>& eval, std::ostream& err) {
  const std::string o = first_overlap(calib, eval);
  if (!o.empty())
    err << "warning: the calibration text overlaps the evaluation text (" << o
        << "): the KLD is not measured on held-out text\n";
}

}  // namespace lowp::cli
