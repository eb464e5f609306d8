// llama.cpp's reference log-probabilities file, as `llama-perplexity --kl-divergence-base FILE`
// writes it and `--kl-divergence` reads it (tools/perplexity/perplexity.cpp):
//   "_logits_", int32 n_ctx, int32 n_vocab, int32 n_chunk, int32 tokens[n_chunk * n_ctx],
//   then for each chunk one row per scored position n_ctx/2 .. n_ctx-2 (the token after it
//   is the target): nv = 2 * ((n_vocab + 1) / 2) + 4 uint16 = float32 scale, float32
//   min_log_prob, n_vocab uint16 q (padded to even), with log p(v) = scale * q + min_log_prob;
//   log-probabilities more than 16 below the row's maximum are stored as q = 0.
// All little-endian. Chunk k covers tokens [k n_ctx, (k + 1) n_ctx); llama.cpp evaluates it
// with its first token replaced by BOS when the vocabulary adds one.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "lowp/accuracy/eval.hpp"

namespace lowp::accuracy {

struct BaseLogits {
  int ctx = 0;              // n_ctx of the run that wrote it
  std::vector<int> tokens;  // n_chunk * ctx, as stored
  EvalRun run;              // the scored positions: targets, decoded log_probs, nll_sum
};

// Throws lowp::Error (one line naming the file) for anything that is not such a file.
BaseLogits read_base_logits(const std::string& path);

// Writes `run` (evaluate() over `tokens` with windows of `ctx`, second halves scored) in that
// format: the complete windows only, as llama.cpp keeps them. Written to a temporary file and
// renamed. Throws lowp::Error when the run does not match or holds non-finite log-probs.
void write_base_logits(const std::string& path, int ctx, std::span<const int> tokens, const EvalRun& run);

// A float32 logits file of `tokens` (positions x vocab, little-endian, row t after token t, as
// llama.cpp's runs and `lowp eval --logits-out` write them) scored as evaluate(model, tokens,
// ., opt) scores its own forward: the same windows, positions and log-softmax. Throws
// lowp::Error naming the file when it cannot be read or is not tokens.size() x vocab floats.
EvalRun read_logits_run(const std::string& path, const LlamaModel& model, std::span<const int> tokens,
                        const EvalOptions& opt);

// Writes that format (`lowp eval --logits-out`), atomically like every file lowp writes.
void write_logits(const std::string& path, std::span<const float> logits);

}  // namespace lowp::accuracy
