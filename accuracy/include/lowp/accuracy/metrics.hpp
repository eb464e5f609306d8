// Comparing a quantized run with the float32 reference on the same tokens, with the
// definitions of llama.cpp's `perplexity --kl-divergence`.
#pragma once
#include <cstddef>
#include "lowp/accuracy/eval.hpp"

namespace lowp::accuracy {

struct Comparison {
  std::size_t tokens = 0;
  double ppl = 0, ppl_se = 0;          // of the quantized run
  double ref_ppl = 0;
  double ln_ppl_ratio = 0, ln_ppl_ratio_se = 0;  // mean ln(PPL_Q / PPL_ref)
  double kld_mean = 0, kld_se = 0, kld_median = 0, kld_p99 = 0, kld_max = 0;
  double dp_mean = 0, dp_rms = 0;      // change in p(actual next token)
  double same_top1 = 0;                // percent
  std::size_t nonfinite = 0;           // positions with NaN/Inf (excluded and counted)
};

// Throws lowp::Error when the runs do not cover the same tokens.
Comparison compare(const EvalRun& ref, const EvalRun& quant);

}  // namespace lowp::accuracy
