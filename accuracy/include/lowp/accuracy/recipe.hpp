// An evaluation recipe: where the Llama forward pass quantizes, and how. A recipe is data,
// written in a small documented text format (docs/recipes.md); the built-in ones are listed
// by `lowp recipes`.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>
#include "lowp/quant/quantize.hpp"

namespace lowp::accuracy {

// The linear layers of a Llama model, in the order of the `weights.<kind>` / `act.<kind>` keys.
enum class LinearKind { wq, wk, wv, wo, gate, up, down, classifier };
inline constexpr std::size_t linear_kind_count = 8;
std::string_view linear_kind_name(LinearKind kind);  // "wq", ..., "gate", "up", "down", "classifier"

enum class AttnRotation { none, hadamard, randomized };
// What the attn.p point quantizes. normalized: P = softmax(S). fa3: FlashAttention-3's released
// FP8 kernel, 2^8 exp(S - rowmax) (its Max_offset), row sums from the unquantized exponentials in
// float32, the output divided by them after P V.
enum class AttnPForm { normalized, fa3 };

// weights.calibrate (docs/calibration.md): how the weight specs' codes and scales are chosen
// from calibration activations (the text given with --calib) instead of round-to-nearest.
enum class CalibMethod { none, imatrix, gptq, awq };
struct CalibrateOptions {
  CalibMethod method = CalibMethod::none;
  bool act_order = false;       // weights.calibrate.act_order (gptq)
  double damp = 0.01;           // weights.calibrate.damp (gptq's percdamp)
  bool imatrix_scales = false;  // weights.calibrate.scales = imatrix (gptq; default rule)
  std::size_t grid = 20;        // weights.calibrate.grid: AWQ's alpha points i / grid
};
std::string_view calib_method_name(CalibMethod m);  // "none", "imatrix", "gptq", "awq"

// act.scale / attn.scale (docs/recipes.md, "Static scales"): where the tensor-level scale of a
// point comes from (quant::has_tensor_scale: a per-tensor spec's scale, NVFP4's float32 level).
// dynamic (the default): each tensor's own amax, so the scale of a window depends on all its
// tokens. static: fixed once per point and layer from the calibration text (--calib), as
// deployed FP8 / NVFP4 inference does: the `percentile`-th percentile (nearest rank) of |x| over
// every finite element the point quantizes in the calibration forward; 100 is the amax.
struct ScaleSource {
  bool fixed = false;
  std::uint32_t percentile_e4 = 1000000;  // the percentile times 10^4, in [1, 1000000]
  bool operator==(const ScaleSource&) const = default;
};
std::string scale_source_text(const ScaleSource& s);  // "dynamic", "static:amax", "static:p99.9"

// The quantization points of one layer. `layer.<N>.<key>` lines override a recipe-wide key in
// layer N only: the per-tensor sensitivity sweep and the mixed-precision search write them.
struct LayerSpecs {
  std::array<std::optional<quant::QuantSpec>, linear_kind_count> weights;  // the classifier entry is unused
  std::array<std::optional<quant::QuantSpec>, linear_kind_count> act;
  std::optional<quant::QuantSpec> q, k, p, v, kv;
  bool empty() const;
};

struct Recipe {
  std::string name;
  std::string note;  // one line
  // A quant::linear_presets() name run as the gradient-free forward of every linear inside the
  // layers (not the classifier); empty: float32 linears. weights.<kind> / act.<kind> override
  // its specs for emulated presets (the SwitchBack int8 engine takes no overrides).
  std::string linear;
  std::array<std::optional<quant::QuantSpec>, linear_kind_count> weights;  // W of each linear
  std::array<std::optional<quant::QuantSpec>, linear_kind_count> act;      // X entering it
  std::optional<quant::QuantSpec> q, k, p, v;  // attention: Q, K before QK^T; P and V before PV
  std::optional<quant::QuantSpec> kv;          // K and V as written to the KV cache
  bool kv_per_head = false;  // kv.group = head: one scale per head and token (block = head_dim)
  AttnPForm p_form = AttnPForm::normalized;
  // After RoPE, Q and K (and V with rotate_v, undone on the attention output) times an
  // orthonormal Hadamard over head_dim (HadaCore), or a random-sign one seeded by `seed`
  // (FlashAttention-3's incoherent processing).
  AttnRotation attn_rotate = AttnRotation::none;
  bool rotate_v = false;
  // QuaRot: RMSNorm gains folded into the next linears, a randomized-Hadamard rotation of the
  // residual stream folded into the weights, and an online Hadamard before down_proj.
  bool quarot = false;
  std::uint64_t seed = 0;  // of the randomized rotations
  // Every spec of the recipe, the linear preset's included, zero-pads a block or tile that a
  // dimension does not fill (e.g. MX blocks of 32 on stories260K's hidden size 172).
  bool pad = false;
  // act.ggml: every linear whose weight is a GGUF tensor read in place runs as llama.cpp's CPU
  // backend runs it: its input quantized to the weight type's activation type (Q8_K, Q8_0, F16,
  // BF16) and, for block types, integer block dots (docs/recipes.md, "llama.cpp's products").
  bool act_ggml = false;
  std::map<int, LayerSpecs> layer;  // layer.<N>.* overrides, by layer index
  CalibrateOptions calibrate;
  ScaleSource act_scale;   // act.scale: the linears' inputs (act.* and the linear preset's X)
  ScaleSource attn_scale;  // attn.scale: attn.q, attn.k, attn.v and the KV cache (kv)

  // The specs in effect in `layer` (-1: the classifier): the recipe-wide ones, overridden by
  // layer[layer]'s. The linear preset's specs are not included (prepare() falls back on them).
  LayerSpecs specs_at(int layer) const;
  // True when nothing is quantized or rotated (the fp32 reference).
  bool is_identity() const;
  // act.scale or attn.scale is static.
  bool static_scales() const { return act_scale.fixed || attn_scale.fixed; }
  // The recipe needs calibration text: weights.calibrate or a static scale, and not is_identity().
  bool needs_calibration() const;
};

// Parses the text format; throws lowp::Error naming the line on anything malformed.
Recipe parse_recipe(std::string_view text);
// The text form of a recipe (parse_recipe(to_text(r)) gives r back).
std::string to_text(const Recipe& r);
std::span<const Recipe> builtin_recipes();
// A built-in name, or a path to a recipe file. Throws lowp::Error listing the names.
Recipe find_recipe(std::string_view name_or_path);
// The list `lowp sweep` runs when --recipes is not given.
std::vector<std::string> default_sweep_recipes();

}  // namespace lowp::accuracy
