// Per-tensor sensitivity, `lowp sweep --model M --sensitivity SPEC,...`: for every quantizable
// tensor (each linear's weight and its input per layer, the KV cache, the attention matmul
// operands, the classifier), the KLD and delta ln PPL from the float32 reference when only that
// tensor is quantized to SPEC. Each (tensor, spec) is one recipe of a model sweep (model_sweep.hpp):
// the model loaded once, the reference run once, the work split across MPI ranks as the sweep's.
// The mixed-precision search over a bits-per-weight budget: search.hpp.
#pragma once
#include <cstddef>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lowp/accuracy/model_sweep.hpp"

namespace lowp::accuracy {

struct SensitivityTensor {
  int layer = -1;           // -1: the classifier (in no layer)
  std::string kind;         // "weight", "act" (a linear's input), "kv" (the cache), "attn" (a matmul operand)
  std::string tensor;       // its recipe key: weights.wq, act.down, kv, attn.q, attn.k, attn.p, attn.v, ...
  std::size_t rows = 0, cols = 0;  // weights: the matrix (out x in); 0 otherwise
  // The recipe key that quantizes it alone: layer.<N>.<tensor>, or <tensor> for the classifier.
  std::string key() const;
};

// Every quantizable tensor of a model of this shape, layer by layer (per layer: the seven
// weights, their seven inputs, kv, attn.q, attn.k, attn.p, attn.v), then the classifier's
// weight and input. weights_only: the weights alone.
std::vector<SensitivityTensor> sensitivity_tensors(const LlamaConfig& c, bool weights_only = false);

// `base` with tensor t also quantized to `spec` (a QuantSpec text), named `name`.
Recipe with_tensor(const Recipe& base, const SensitivityTensor& t, std::string_view spec, const std::string& name);

struct SensitivityRow {
  SensitivityTensor t;
  std::string spec;
  Comparison cmp;                  // against the reference (kld_mean, ln_ppl_ratio, ...)
  double kld = 0, dlnppl = 0;      // the tensor's own share: cmp's minus the base recipe's (equal with an fp32 base)
  double bits_per_element = 0;     // weights: storage bits per weight with the scales (NaN otherwise)
  double sqnr_db = 0;              // of the tensor itself, from the run's error attribution
  double seconds = 0;
  std::string error;               // the recipe failed (a block that does not divide the tensor...)
};

struct Sensitivity {
  ModelSweep sweep;                 // the reference and settings (results: one per row, then the base)
  std::string base = "fp32";        // the recipe every tensor is added to
  Comparison base_cmp;              // the base recipe alone (zero for fp32)
  std::vector<std::string> specs;
  std::vector<SensitivityRow> rows; // in sensitivity_tensors order, each tensor's specs in the order given
};

// Throws lowp::Error for an unknown spec (before any evaluation) and what run_model_sweep throws.
// `base` (default: nothing quantized) holds what stays quantized under every tensor, e.g. the
// activations of a W-only search. Under mpirun rank 0 returns the rows, the others no rows.
Sensitivity run_sensitivity(const LlamaModel& model, std::span<const int> tokens, std::span<const std::string> specs,
                            const EvalOptions& opt = {}, const SweepProgress& progress = {},
                            const EvalRun* base_logits = nullptr, const Recipe* base = nullptr,
                            bool weights_only = false);

// Writers (columns and keys: docs/sweep.md, "Sensitivity"): an aligned table, CSV, JSON, and
// an SVG heatmap of log10 KLD, layers x tensors, one panel per spec.
void write_sensitivity_table(std::ostream& out, const Sensitivity& s);
void write_sensitivity_csv(std::ostream& out, const Sensitivity& s);
void write_sensitivity_json(std::ostream& out, const Sensitivity& s);
void write_sensitivity_svg(std::ostream& out, const Sensitivity& s);

}  // namespace lowp::accuracy
