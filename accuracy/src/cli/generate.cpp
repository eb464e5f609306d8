// `lowp generate`: continues a prompt with a model under an evaluation recipe, as llama2.c's
// run.c does: the prompt (from BOS) is fed token by token through a KV cache (Decoder), then
// each next token is the argmax (temperature 0) or a sample of softmax(logits / T); it stops
// at BOS, at --max-tokens new tokens, or at the model's seq_len.
//
// The weights stay as the file stores them (a GGUF's block types, bf16, f16), read in place by
// every step as `lowp eval` reads them: the bits are those of the widened copy (the same
// decoders), without the float32 copy's memory or bandwidth.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/recipe_option.hpp"
#include "lowp/accuracy/decoder.hpp"
#include "lowp/accuracy/loaders.hpp"
#include "lowp/accuracy/recipe.hpp"
#include "lowp/accuracy/sample.hpp"
#include "lowp/accuracy/tokenizer.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::cli {
namespace {

struct GenerateArgs {
  std::string model, prompt, recipe = "fp32", max_memory;
  int max_tokens = 256, threads = 0;
  double temperature = 0;
  std::uint64_t seed = 1;
  bool timing = false;
  CalibArgs calib;
};

int run_generate(Io& io, const GenerateArgs& a) {
  if (a.max_tokens < 0) throw Failure{exit_usage, "--max-tokens must be >= 0, not " + std::to_string(a.max_tokens)};
  if (!(a.temperature >= 0) || !std::isfinite(a.temperature))
    throw Failure{exit_usage, "--temperature must be a number >= 0"};
  if (a.threads < 0) throw Failure{exit_usage, "--threads must be >= 0, not " + std::to_string(a.threads)};
  const accuracy::Recipe recipe = recipe_option(a.recipe, "generate", io.err);
  apply_max_memory(a.max_memory);
  const std::string path = accuracy::resolve_model_path(a.model);
  const accuracy::LlamaModel model = accuracy::load_model(path, accuracy::WeightStorage::mapped);
  const accuracy::Tokenizer tok = [&] {
    try {
      return accuracy::tokenizer_for_model(path, model.config.vocab_size);
    } catch (const accuracy::NoTokenizer& e) {  // generate prints text: token ids would not do
      throw Failure{exit_bad_data, std::string(e.what()) +
                                       ": generate needs the model's tokenizer (inside a GGUF, or tokenizer.bin, "
                                       "tokenizer.json or tokenizer.model beside the model)"};
    }
  }();
  // weights.calibrate and static scales: calibrated (or read from the cache) as `lowp eval` does.
  const auto calib = calibration_text(a.calib, path, model.config.vocab_size, "auto", io.err);
  require_calibration(recipe, calib.get());
  std::vector<int> ids = tok.encode(a.prompt, true);
  if (ids.empty()) throw Failure{exit_bad_data, "the tokenizer has no BOS token to start from"};
  const std::size_t seq = static_cast<std::size_t>(model.config.seq_len);
  if (ids.size() > seq)
    throw Failure{exit_usage, "the prompt has " + std::to_string(ids.size()) + " tokens, beyond the model's seq_len " + std::to_string(seq)};

  // The last step feeds position limit - 1 (its logits give token `limit`).
  const std::size_t limit = std::min(seq, ids.size() - 1 + static_cast<std::size_t>(a.max_tokens));
  accuracy::Decoder decoder(model, recipe, std::max<std::size_t>(limit, 1), a.threads, calib.get());
  // After the decoder's set-up, so that a failure there stays the one line on stderr.
  if (limit < ids.size() - 1 + static_cast<std::size_t>(a.max_tokens))
    io.err << "lowp generate: note: --max-tokens " << a.max_tokens << " is cut to " << limit - (ids.size() - 1)
           << " by the model's context (seq_len " << seq << ", prompt " << ids.size() << " tokens with BOS)\n";
  // The prompt's own tokens after BOS are printed as run.c prints them; a tokenizer that adds no
  // BOS (GPT-2's) starts the prompt with a token of its text.
  if (tok.bos() < 0 || ids[0] != tok.bos()) io.out << tok.decode(std::span<const int>(ids.data(), 1));
  for (std::size_t i = 1; i < ids.size(); ++i) io.out << tok.decode_token(ids[i - 1], ids[i]);
  if (ids.size() - 1 < limit)
    for (std::size_t i = 0; i + 1 < ids.size(); ++i) decoder.feed(ids[i]);
  // --timing: the steps that sample a token, from the first (as run.c's "achieved tok/s").
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t fed = ids.size();
  while (ids.size() - 1 < limit) {
    const std::size_t T = ids.size();
    const int next = accuracy::sample_token(decoder.step(ids.back()), a.temperature, a.seed, T);
    if (next == tok.bos() && tok.bos() >= 0) break;  // run.c: BOS delimits sequences
    io.out << tok.decode_token(ids.back(), next);
    io.out.flush();
    ids.push_back(next);
  }
  io.out << '\n';
  if (a.timing) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::size_t n = ids.size() - fed;
    char line[160];
    std::snprintf(line, sizeof line, "generated %zu tokens in %.3f s: %.2f tokens/s\n", n, s,
                  s > 0 ? static_cast<double>(n) / s : 0.0);
    io.err << line;
  }
  return exit_ok;
}

}  // namespace

Command add_generate_command(CLI::App& parent) {
  auto a = std::make_shared<GenerateArgs>();
  CLI::App* app = parent.add_subcommand("generate", "Continue a prompt with a model (greedy at temperature 0, as llama2.c's run.c)");
  app->add_option("--model", a->model, "Llama checkpoint (llama2.c .bin, GGUF, safetensors) or a built-in name (shakespeare)")->required();
  app->add_option("--prompt", a->prompt, "Text to continue (empty: start from BOS)");
  app->add_option("--max-tokens", a->max_tokens, "New tokens at most (the model's seq_len bounds prompt + new)")->capture_default_str();
  app->add_option("--temperature", a->temperature, "0: greedy; else sample softmax(logits / T)")->capture_default_str();
  app->add_option("--seed", a->seed, "Seed of the sampling")->capture_default_str();
  app->add_option("--recipe", a->recipe, "Evaluation recipe the model runs under (`lowp recipes`)")->capture_default_str();
  app->add_option("--threads", a->threads, "Threads (default 0: all)");
  app->add_flag("--timing", a->timing, "Print the generated tokens per second (sampling steps, load and prompt excluded) to stderr");
  add_max_memory_option(app, a->max_memory);
  add_calib_options(app, a->calib);
  app->footer("The tokenizer is found as `lowp eval --text` finds it (GGUF's own, tokenizer.bin beside the model, or bytes).");
  return {app, [a](Io& io) { return run_generate(io, *a); }};
}

}  // namespace lowp::cli
