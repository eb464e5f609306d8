// The built-in evaluation recipes, written in the recipe text format itself, and the lookup.
#include <algorithm>
#include <string>

#include "lowp/accuracy/recipe.hpp"
#include "lowp/numerics/error.hpp"
#include "recipe/find_recipe.hpp"
#include "recipe/recipe_notes.hpp"
#include "recipe/train_recipe.hpp"

namespace lowp::accuracy {
namespace {

constexpr std::string_view kBuiltins[] = {
    R"(name = fp32
note = nothing quantized: the float32 reference (KLD exactly 0))",
    R"(name = bf16
note = every weight and linear input rounded to bfloat16 (classifier included)
weights = bf16
act = bf16
weights.classifier = bf16
act.classifier = bf16)",
    R"(name = fp16
note = every weight and linear input rounded to IEEE half (classifier included)
weights = fp16
act = fp16
weights.classifier = fp16
act.classifier = fp16)",
    R"(name = fp8-tensorwise
note = linear preset fp8-tensorwise: E4M3 X and W, per-tensor current scaling (torchao)
linear = fp8-tensorwise)",
    R"(name = fp8-rowwise
note = linear preset fp8-rowwise: E4M3, per-token X and per-channel W scales (torchao)
linear = fp8-rowwise)",
    // Padding lets block recipes run on models whose sizes the block does not divide.
    R"(name = fp8-block128
note = linear preset fp8-block128 (DeepSeek-V3): E4M3 X in 1x128 blocks, W in 128x128 tiles, padded
linear = fp8-block128
pad = on)",
    R"(name = mxfp8
note = linear preset mxfp8: OCP MX E4M3, E8M0 scale per 32 along K, padded
linear = mxfp8
pad = on)",
    R"(name = mxfp8-te
note = linear preset mxfp8-te (TransformerEngine MXFP8BlockScaling): E4M3, RCEIL E8M0 scale per 32 along K, padded
linear = mxfp8-te
pad = on)",
    R"(name = mxfp6
note = linear preset mxfp6: OCP MX E2M3, E8M0 scale per 32 along K, padded
linear = mxfp6
pad = on)",
    R"(name = mxfp4
note = linear preset mxfp4: OCP MX E2M1, E8M0 scale per 32 along K, padded
linear = mxfp4
pad = on)",
    // The same blocks with the scale rounded up (RCEIL): no element clips (docs/recipes.md).
    R"(name = mxfp8-rceil
note = mxfp8 with RCEIL scales (the smallest 2^e with 2^e x 448 >= amax: nothing clips), padded
weights = mxfp8:rceil
act = mxfp8:rceil
pad = on)",
    R"(name = mxfp6-rceil
note = mxfp6 with RCEIL scales (the smallest 2^e with 2^e x 7.5 >= amax: nothing clips), padded
weights = mxfp6:rceil
act = mxfp6:rceil
pad = on)",
    R"(name = mxfp4-rceil
note = mxfp4 with RCEIL scales (the smallest 2^e with 2^e x 6 >= amax: nothing clips), padded
weights = mxfp4:rceil
act = mxfp4:rceil
pad = on)",
    R"(name = nvfp4
note = linear preset nvfp4: E2M1, UE4M3 scale per 16 and a float32 tensor scale, padded
linear = nvfp4
pad = on)",
    R"(name = nvfp4-train
note = linear preset nvfp4-train (NVIDIA's NVFP4 training recipe): nvfp4 X in 1x16 blocks, W in 16x16 tiles, padded
linear = nvfp4-train
pad = on)",
    R"(name = switchback-int8
note = linear preset switchback-int8: int8 X per token, int8 W per tensor, real int8 GEMM
linear = switchback-int8)",
    R"(name = fp8-attn
note = FlashAttention-3 FP8: Q, K, V per-tensor E4M3, P = 2^8 exp(S - rowmax) cast to E4M3, divided after PV
attn.qk = e4m3:tensor:amax
attn.v = e4m3:tensor:amax
attn.p = e4m3:tensor:none
attn.p_form = fa3)",
    R"(name = fp8-attn-hadamard
note = fp8-attn with Q and K Hadamard-rotated over head_dim after RoPE (HadaCore: no random signs)
attn.qk = e4m3:tensor:amax
attn.v = e4m3:tensor:amax
attn.p = e4m3:tensor:none
attn.p_form = fa3
attn.rotate = hadamard)",
    R"(name = fp8-attn-fa3
note = FlashAttention-3 FP8 with incoherent processing: fp8-attn with Q and K times a random-sign Hadamard over head_dim
attn.qk = e4m3:tensor:amax
attn.v = e4m3:tensor:amax
attn.p = e4m3:tensor:none
attn.p_form = fa3
attn.rotate = randomized)",
    R"(name = kv4
note = 4-bit KV cache: int4 with an absmax scale per head and token
kv = int4:int
kv.group = head)",
    R"(name = kv4-hadamard
note = kv4 with K and V Hadamard-rotated over head_dim before the cache (QuaRot's KV)
kv = int4:int
kv.group = head
attn.rotate = hadamard
attn.rotate_v = on)",
    R"(name = kv4-e2m1-hadamard
note = 4-bit E2M1 KV cache (absmax scale per head and token), K and V Hadamard-rotated
kv = e2m1:amax
kv.group = head
attn.rotate = hadamard
attn.rotate_v = on)",
    R"(name = quarot-w4a4kv4
note = QuaRot with round-to-nearest: rotated residual, int4 W per channel, int4 X per token, int4 KV
quarot = on
weights = int4:row:int
act = int4:row:int
kv = int4:int
kv.group = head
attn.rotate = hadamard
attn.rotate_v = on)",
    R"(name = quarot-w8a8kv4
note = QuaRot with round-to-nearest: rotated residual, int8 W per channel, int8 X per token, int4 KV
quarot = on
weights = int8:row:int
act = int8:row:int
kv = int4:int
kv.group = head
attn.rotate = hadamard
attn.rotate_v = on)",
    R"(name = fp8-rowwise-attn-hadamard
note = fp8-rowwise linears with Hadamard-rotated FP8 attention
linear = fp8-rowwise
attn.qk = e4m3:tensor:amax
attn.v = e4m3:tensor:amax
attn.p = e4m3:tensor:none
attn.p_form = fa3
attn.rotate = hadamard)",
    R"(name = mxfp4-attn-hadamard
note = mxfp4 linears with Hadamard-rotated FP8 attention
linear = mxfp4
pad = on
attn.qk = e4m3:tensor:amax
attn.v = e4m3:tensor:amax
attn.p = e4m3:tensor:none
attn.p_form = fa3
attn.rotate = hadamard)",
    R"(name = nvfp4-attn-hadamard
note = nvfp4 linears with Hadamard-rotated FP8 attention
linear = nvfp4
pad = on
attn.qk = e4m3:tensor:amax
attn.v = e4m3:tensor:amax
attn.p = e4m3:tensor:none
attn.p_form = fa3
attn.rotate = hadamard)",
    R"(name = quarot-mxfp4
note = mxfp4 linears on a QuaRot-rotated model (residual rotation, online Hadamard before down_proj)
linear = mxfp4
pad = on
quarot = on)",
    R"(name = quarot-nvfp4
note = nvfp4 linears on a QuaRot-rotated model (residual rotation, online Hadamard before down_proj)
linear = nvfp4
pad = on
quarot = on)",
    R"(name = ggml-act
note = a GGUF's weights as stored, each linear's input quantized as llama.cpp's CPU backend does (Q8_K, Q8_0, F16, BF16) with its integer block dots (Q4_0, Q5_0, Q8_0, Q4_K, Q5_K, Q6_K); float32 weights unchanged
act.ggml = on)",
};

std::vector<Recipe> parse_builtins() {
  std::vector<Recipe> v;
  for (const auto text : kBuiltins) v.push_back(parse_recipe(text));
  return v;
}

}  // namespace

std::span<const Recipe> builtin_recipes() {
  static const std::vector<Recipe> recipes = parse_builtins();
  return recipes;
}

Recipe find_recipe(std::string_view name_or_path) {
  std::vector<std::string> training_keys;
  return detail::find_recipe_noting(name_or_path, training_keys);
}

Recipe detail::find_recipe_noting(std::string_view name_or_path, std::vector<std::string>& training_keys) {
  // Training-only names (bf16-pure, fp8-delayed, quartet-*, scalify, ...) are not evaluation
  // recipes: their forward holds what evaluation does not emulate (amax histories, QuEST,
  // accumulators, a bf16 classifier), so evaluating them under their name would give other bits.
  for (const ::lowp::train::TrainRecipe& t : ::lowp::train::builtin_train_recipes())
    if (t.name == name_or_path &&
        std::none_of(builtin_recipes().begin(), builtin_recipes().end(), [&](const Recipe& r) { return r.name == t.name; }))
      throw Error("recipe '" + t.name + "' is a training recipe (lowp train, lowp.torch), not an evaluation one: " +
                  "evaluation does not emulate its forward exactly; `lowp recipes` lists both");
  return accuracy::detail::find_builtin_or_file(
      name_or_path, builtin_recipes(), {},
      [&](std::string_view text) { return parse_recipe_noting(text, training_keys); }, "recipe");
}

std::vector<std::string> default_sweep_recipes() {
  return {"bf16",        "fp16",          "fp8-tensorwise",  "fp8-rowwise", "fp8-block128",
          "mxfp8",       "mxfp8-rceil",   "mxfp6",           "mxfp6-rceil", "mxfp4",
          "mxfp4-rceil", "nvfp4",         "switchback-int8", "fp8-attn",    "fp8-attn-hadamard",
          "kv4",         "kv4-hadamard",  "mxfp4-attn-hadamard", "quarot-w4a4kv4"};
}

}  // namespace lowp::accuracy
