// Generation one token at a time with a KV cache, as llama2.c's run.c steps.
//
// step(token) feeds the token at the next position, appends its K and V to the cache and
// returns the logits: bitwise the last row of evaluate()'s logits of the prefix fed so far,
// under the same recipe (the same quantization points, the same arithmetic). A kv4 recipe's
// cache holds what evaluation's holds, the K and V quantized per head and token.
#pragma once
#include <cstddef>
#include <memory>
#include <span>

#include "lowp/accuracy/calibrate.hpp"
#include "lowp/accuracy/model.hpp"
#include "lowp/accuracy/recipe.hpp"

namespace lowp::accuracy {

class Decoder {
 public:
  // `positions`: the most tokens that will be fed (the cache and the RoPE tables hold that
  // many). The model must outlive the decoder (unquantized weights are read in place).
  // threads = 0: all. Throws lowp::Error (one line): a recipe that does not fit the model, or
  // the cache and the recipe's weight copies above the memory budget (lowp/accuracy/memory.hpp).
  // `calib`: the calibration text of a recipe with weights.calibrate or static scales
  // (act.scale / attn.scale = static), calibrated or read from its cache as evaluate() does.
  Decoder(const LlamaModel& model, const Recipe& recipe, std::size_t positions, int threads = 0,
          const CalibrationText* calib = nullptr);
  ~Decoder();
  Decoder(Decoder&&) noexcept;
  Decoder& operator=(Decoder&&) noexcept;

  // Feeds `token` at position position() and returns the vocab_size logits (valid until the
  // next call). lowp::Error when the token is outside the vocabulary or the positions are used up.
  std::span<const float> step(int token);
  // The same without the logits (a prompt's tokens before its last).
  void feed(int token);
  std::size_t position() const;

  // False when a quantization point's scale groups span tokens (fp8-attn's per-tensor Q, K,
  // V; fp8-tensorwise's per-tensor linear inputs; NVFP4's tensor level; stochastic rounding
  // keyed by the element's place in the window): evaluation of a prefix then changes every
  // earlier token's activations with each new token, which no cache holds, so step() re-runs
  // the prefix as evaluate() does (its cost grows with the position). Static scales
  // (act.scale / attn.scale = static) do not span tokens: with them those recipes cache.
  bool cached() const;

  // Bytes of the linear weights (classifier included) one cached step reads, as they are
  // held: the model's own stored type, the recipe's float32 copies, or their packed 4-bit
  // form (4-bit weight specs; an int8 engine's weights count a byte each).
  double step_weight_bytes() const;

  // Bytes of a float32 KV cache: layers x positions x kv_heads x head_dim x 2 (K and V) x 4.
  static double cache_bytes(const LlamaConfig& c, std::size_t positions);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lowp::accuracy
