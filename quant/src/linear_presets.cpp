// The named linear-layer recipes: data built from QuantSpec text, so a user's own recipe is
// the same struct filled in differently.
#include <string>
#include <vector>

#include "lowp/numerics/error.hpp"
#include "lowp/quant/linear.hpp"

namespace lowp::quant {
namespace {

using hadamard::RotationKind;

std::optional<QuantSpec> spec(std::string_view text) {
  if (text.empty()) return std::nullopt;  // float32, not quantized
  return parse_quant_spec(text);
}

GemmRecipe gemm(std::string_view a, std::string_view b, RotationKind rot = RotationKind::none,
                std::size_t block = 0) {
  GemmRecipe g;
  g.a = spec(a);
  g.b = spec(b);
  g.rotation = rot;
  g.rotation_block = block;
  return g;
}

LinearRecipe recipe(std::string name, std::string note, GemmRecipe fwd, GemmRecipe dgrad,
                    GemmRecipe wgrad) {
  LinearRecipe r;
  r.name = std::move(name);
  r.note = std::move(note);
  r.fwd = std::move(fwd);
  r.dgrad = std::move(dgrad);
  r.wgrad = std::move(wgrad);
  return r;
}

// The same spec on all six operands.
LinearRecipe uniform(std::string name, std::string note, std::string_view s) {
  return recipe(std::move(name), std::move(note), gemm(s, s), gemm(s, s), gemm(s, s));
}

LinearRecipe switchback(std::string name, std::string note, bool vectorwise, bool memeff) {
  // W per tensor, or per output row in the forward and per input column in the dgrad
  // (row-wise on W^T), as bitsandbytes' vector-wise SwitchBack does.
  const std::string_view w = vectorwise ? "int8_sym:row:int" : "int8_sym:tensor:int";
  LinearRecipe r = recipe(std::move(name), std::move(note), gemm("int8_sym:row:int", w),
                          gemm("int8_sym:row:int", w), gemm("bf16", "bf16"));
  r.engine = LinearEngine::switchback_int8;
  r.wgrad_uses_quantized_x = memeff;
  return r;
}

std::vector<LinearRecipe> build() {
  std::vector<LinearRecipe> v;
  v.push_back(recipe("fp32", "float32 everywhere: the reference", {}, {}, {}));
  v.push_back(uniform("bf16", "bfloat16 operands, float32 accumulation (mixed precision)", "bf16"));
  v.push_back(recipe("fp8-tensorwise",
                     "torchao/TorchTitan tensorwise: E4M3 X and W, E5M2 dY, dynamic per-tensor amax",
                     gemm("e4m3:tensor:amax", "e4m3:tensor:amax"),
                     gemm("e5m2:tensor:amax", "e4m3:tensor:amax"),
                     gemm("e5m2:tensor:amax", "e4m3:tensor:amax")));
  v.push_back(uniform("fp8-rowwise",
                      "torchao rowwise: E4M3 everywhere, one power-of-two scale per row of each operand",
                      "e4m3:row:pow2"));
  {
    LinearRecipe r = uniform("fp8-rowwise-gw-hp",
                             "torchao rowwise_with_gw_hp: fp8-rowwise, weight gradient in float32",
                             "e4m3:row:pow2");
    r.wgrad = GemmRecipe{};
    v.push_back(std::move(r));
  }
  {
    LinearRecipe r = recipe("fp8-delayed",
                            "TransformerEngine DelayedScaling (HYBRID): E4M3 forward, E5M2 dY, "
                            "per-tensor scales from a 1024-step amax history (max, margin 0)",
                            gemm("e4m3:tensor:amax", "e4m3:tensor:amax"),
                            gemm("e5m2:tensor:amax", "e4m3:tensor:amax"),
                            gemm("e5m2:tensor:amax", "e4m3:tensor:amax"));
    r.fwd.delayed = r.dgrad.delayed = r.wgrad.delayed = true;
    v.push_back(std::move(r));
  }
  v.push_back(recipe("fp8-block128",
                     "DeepSeek-V3: E4M3, 1x128 activation/gradient blocks, 128x128 weight tiles",
                     gemm("e4m3:b128:amax", "e4m3:t128:amax"),
                     gemm("e4m3:b128:amax", "e4m3:t128:amax"),
                     gemm("e4m3:b128:amax", "e4m3:b128:amax")));
  v.push_back(uniform("mxfp8", "OCP MXFP8: E4M3, 32-element blocks, E8M0 scales, every operand", "mxfp8"));
  v.push_back(uniform("mxfp6", "OCP MXFP6: E2M3, 32-element blocks, E8M0 scales, every operand", "mxfp6"));
  v.push_back(uniform("mxfp4", "OCP MXFP4: E2M1, 32-element blocks, E8M0 scales, every operand", "mxfp4"));
  v.push_back(uniform("nvfp4", "NVFP4: E2M1, 16-element blocks, UE4M3 scales x float32 tensor scale", "nvfp4"));
  {
    // RCEIL scales in the backward keep every element below 6, so stochastic rounding never
    // saturates and the gradients stay unbiased.
    const std::string_view sr = "e2m1:b32:rceil:stochastic";
    v.push_back(recipe("quartet-fp4",
                       "Quartet: MXFP4 forward after a 32-block Hadamard; backward MXFP4 with "
                       "random-sign Hadamard and stochastic rounding",
                       gemm("mxfp4", "mxfp4", RotationKind::block_diagonal, 32),
                       gemm(sr, sr, RotationKind::randomized), gemm(sr, sr, RotationKind::randomized)));
  }
  v.push_back(switchback("switchback-int8",
                         "SwitchBack (Wortsman et al. 2023): int8 row-wise X/dY x tensor-wise W "
                         "through the int8 GEMM; bf16 weight gradient", false, false));
  v.push_back(switchback("switchback-int8-vectorwise",
                         "SwitchBack vector-wise: W int8 per output row (forward) and per input "
                         "column (dgrad)", true, false));
  v.push_back(switchback("switchback-int8-memeff",
                         "SwitchBack memory-efficient: keeps the int8 X; wgrad on the dequantized X",
                         false, true));
  return v;
}

std::string operand(const std::optional<QuantSpec>& s) { return s ? quant::describe(*s) : "f32"; }

std::string gemm_text(const char* name, const GemmRecipe& g, const char* a, const char* b) {
  std::string r = name;
  r.append(" ").append(a).append("=").append(operand(g.a));
  r.append(" ").append(b).append("=").append(operand(g.b));
  switch (g.rotation) {
    case RotationKind::none: break;
    case RotationKind::hadamard: r += " rot=hadamard"; break;
    case RotationKind::randomized: r += " rot=randomized"; break;
    case RotationKind::block_diagonal:
      r.append(" rot=block").append(std::to_string(g.rotation_block));
      break;
  }
  if (g.delayed) r += " delayed";
  return r;
}

}  // namespace

std::span<const LinearRecipe> linear_presets() {
  static const std::vector<LinearRecipe> presets = build();
  return presets;
}

const LinearRecipe& linear_preset(std::string_view name) {
  std::string names;
  for (const LinearRecipe& r : linear_presets()) {
    if (r.name == name) return r;
    names.append(names.empty() ? "" : ", ").append(r.name);
  }
  throw Error("unknown linear preset '" + std::string(name) + "' (known: " + names + ")");
}

std::string describe(const LinearRecipe& r) {
  std::string s = r.engine == LinearEngine::switchback_int8 ? "[int8 GEMM] " : "";
  s += gemm_text("fwd", r.fwd, "X", "W") + "; " + gemm_text("dgrad", r.dgrad, "dY", "W^T") + "; " +
       gemm_text("wgrad", r.wgrad, "dY^T", "X^T");
  if (r.wgrad_uses_quantized_x) s += " (from the quantized X)";
  return s;
}

}  // namespace lowp::quant
