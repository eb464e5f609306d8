// Calibration text for `weights.calibrate = imatrix | gptq | awq` and static scales
// (docs/calibration.md): each linear's input activations captured by a float32 forward over the
// text, in windows, and reduced to the statistic the method needs; the calibrated weights and
// static scales cached on disk.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "lowp/accuracy/model.hpp"
#include "lowp/accuracy/recipe.hpp"

namespace lowp::accuracy {

struct CalibrationText {
  std::vector<int> tokens;
  int bos = -1;  // >= 0: each window's first token is replaced by this id (as EvalOptions::bos)
  int ctx = 0;   // window length; 0: the evaluation's
  // Part of the cache key: what identifies the model file (e.g. its path, size and mtime).
  // Empty: nothing is cached.
  std::string model_id;
  std::string cache_dir;     // where calibrated weights are cached (empty: not cached)
  std::string imatrix_file;  // weights.calibrate = imatrix: llama.cpp's .dat instead of computing it
  std::function<void(const std::string&)> warn;  // a corrupt cache file, etc. (nullptr: silent)
};

// llama.cpp's importance matrix of every linear inside the layers, computed as lowp's
// calibration does (float32 forward, windows of text.ctx, or of `ctx` when text.ctx is 0): per
// input column the mean of x_j^2 over every calibration position. Keyed by GGUF tensor name
// (blk.<N>.attn_q.weight, ... ffn_down.weight), as llama-imatrix writes them.
std::map<std::string, std::vector<float>> importance_matrix(const LlamaModel& model, const CalibrationText& text,
                                                            int ctx, int threads = 0);

// act.scale / attn.scale = static (docs/recipes.md, "Static scales"): the calibrated amax (or
// percentile) of every static point, as evaluate() and the Decoder use it (computed, or read
// from text.cache_dir), keyed "<layer>.<point>": "0.x.wq", "1.kv.k", "-1.x.classifier". A
// weights.calibrate part of the recipe is calibrated with windows of text.ctx, or else of the
// model's seq_len. lowp::Error when the recipe does not fit the model or the text has no tokens.
std::map<std::string, float> static_scales(const LlamaModel& model, const Recipe& recipe, const CalibrationText& text,
                                           int threads = 0);

// The key of `recipe` that needs calibration text `text` does not bring ("weights.calibrate =
// gptq", "act.scale = static:amax", ...; text null: none given); empty when nothing is missing.
// Each front end (CLI, Python) words the advice in its own terms.
std::string missing_calibration(const Recipe& recipe, const CalibrationText* text);

// The GGUF tensor name of a linear of layer `layer` (blk.<layer>.attn_q.weight, ...).
std::string gguf_linear_name(int layer, std::size_t kind);

}  // namespace lowp::accuracy
