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
  // torchao's rowwise_with_gw_hp (Float8LinearRecipeName.ROWWISE_WITH_GW_HP): rowwise forward,
  // dY per row times W per tensor in the dgrad (both E4M3, power-of-two scales), wgrad unquantized.
  v.push_back(recipe("fp8-rowwise-gw-hp",
                     "torchao rowwise_with_gw_hp: E4M3, power-of-two scales per row (forward, dY), W per "
                     "tensor in the dgrad, weight gradient in float32",
                     gemm("e4m3:row:pow2", "e4m3:row:pow2"), gemm("e4m3:row:pow2", "e4m3:tensor:pow2"), {}));
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
  {
    LinearRecipe r = recipe("fp8-block128",
                            "DeepSeek-V3: E4M3, 1x128 activation/gradient blocks, 128x128 weight tiles, "
                            "14-bit accumulator promoted to float32 every 128 products",
                            gemm("e4m3:b128:amax", "e4m3:t128:amax"), gemm("e4m3:b128:amax", "e4m3:t128:amax"),
                            gemm("e4m3:b128:amax", "e4m3:b128:amax"));
    // DeepSeek-V3 measured ~14 bits kept by the H800's FP8 accumulation (13 stored mantissa
    // bits here, truncating) and adds each 128-product partial sum into float32.
    const Accumulation acc{13, 8, Round::toward_zero, 128, 0};
    r.fwd.accumulation = r.dgrad.accumulation = r.wgrad.accumulation = acc;
    v.push_back(std::move(r));
  }
  v.push_back(uniform("mxfp8", "OCP MXFP8: E4M3, 32-element blocks, E8M0 scales, every operand", "mxfp8"));
  v.push_back(uniform("mxfp8-te",
                      "TransformerEngine MXFP8BlockScaling: E4M3 everywhere, RCEIL E8M0 scales per 32; "
                      "row- and column-wise copies each quantized from the float data",
                      "e4m3:b32:rceil"));
  v.push_back(uniform("mxfp6", "OCP MXFP6: E2M3, 32-element blocks, E8M0 scales, every operand", "mxfp6"));
  v.push_back(uniform("mxfp4", "OCP MXFP4: E2M1, 32-element blocks, E8M0 scales, every operand", "mxfp4"));
  v.push_back(uniform("nvfp4", "NVFP4: E2M1, 16-element blocks, UE4M3 scales x float32 tensor scale", "nvfp4"));
  {
    // NVIDIA's NVFP4 training recipe (TransformerEngine NVFP4BlockScaling): W in 16x16 tiles,
    // so the forward and the dgrad read one quantized W (transposed); gradients rounded
    // stochastically; the wgrad operands after TransformerEngine's random Hadamard transform
    // along the tokens: 16-blocks with its one fixed 16-entry sign vector (x D H).
    const std::string_view w = "e2m1:t16:nvfp4", g = "e2m1:b16:nvfp4:stochastic";
    LinearRecipe r = recipe("nvfp4-train",
                            "NVIDIA NVFP4 training: 16x16 W tiles, 1x16 X/dY blocks, stochastic rounding "
                            "of dY, 16-point Hadamard with TransformerEngine's fixed signs on the wgrad operands",
                            gemm("nvfp4", w), gemm(g, w), gemm(g, "nvfp4", RotationKind::block_diagonal, 16));
    r.wgrad.signs = BlockSigns::fixed;
    v.push_back(std::move(r));
  }
  {
    // Quartet (IST-DASLab/Quartet, QuartetMasterWeightsFn over QuTLASS): forward QuEST after a
    // 32-block Hadamard; both backward GEMMs after a 32-block Hadamard times one random sign
    // vector per backward pass, the gradient stochastically rounded with Quartet's
    // 2^floor(log2 amax) / 3 scale, re-quantizing the forward's quantized W and X. (The
    // backward specs only name the format, the 32-blocks and the rounding: quartet_sr sets
    // the scale.)
    const std::string_view sr = "e2m1:b32:mx:stochastic";
    LinearRecipe r = recipe("quartet-fp4",
                            "Quartet: MXFP4 forward after a 32-block Hadamard with QuEST RMS clipping (clip "
                            "mask gates the gradient); backward re-quantizes the forward's W and X after a "
                            "32-block Hadamard with per-step random signs, SR",
                            gemm("mxfp4", "mxfp4", RotationKind::block_diagonal, 32),
                            gemm(sr, sr, RotationKind::block_diagonal, 32), gemm(sr, sr, RotationKind::block_diagonal, 32));
    r.fwd.a_special = r.fwd.b_special = SpecialQuant::quest;
    for (GemmRecipe* g : {&r.dgrad, &r.wgrad}) {
      g->signs = BlockSigns::per_step;
      g->a_special = g->b_special = SpecialQuant::quartet_sr;
    }
    r.backward_from_forward_operands = true;
    v.push_back(std::move(r));
  }
  {
    // lowp's earlier Quartet backward, kept for comparison: RCEIL scales keep every element
    // below 6, so stochastic rounding never saturates and the gradients stay unbiased.
    const std::string_view sr = "e2m1:b32:rceil:stochastic";
    LinearRecipe r = recipe("quartet-fp4-fullrot",
                            "Quartet's forward; backward MXFP4 (RCEIL, SR) of the float W and X after a "
                            "random-sign Hadamard over the whole reduction dimension (not Quartet's code)",
                            gemm("mxfp4", "mxfp4", RotationKind::block_diagonal, 32),
                            gemm(sr, sr, RotationKind::randomized), gemm(sr, sr, RotationKind::randomized));
    r.fwd.a_special = r.fwd.b_special = SpecialQuant::quest;
    v.push_back(std::move(r));
  }
  {
    // Quartet II: forward NVFP4 round-to-nearest choosing 4 or 6 per block; both backward
    // GEMMs after a 16-point random Hadamard transform, quantized with MS-EDEN.
    LinearRecipe r = recipe("quartet2-nvfp4",
                            "Quartet II: NVFP4 forward RTN with the 4-over-6 block choice; backward NVFP4 "
                            "after a random Hadamard, MS-EDEN (RTN codes, SR'd corrected scales)",
                            gemm("nvfp4", "nvfp4"), gemm("nvfp4", "nvfp4", RotationKind::block_diagonal, 16),
                            gemm("nvfp4", "nvfp4", RotationKind::block_diagonal, 16));
    r.fwd.a_special = r.fwd.b_special = SpecialQuant::four_over_six;
    for (GemmRecipe* g : {&r.dgrad, &r.wgrad}) {
      g->signs = BlockSigns::per_index;
      g->a_special = g->b_special = SpecialQuant::ms_eden;
    }
    v.push_back(std::move(r));
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

const char* special_text(SpecialQuant s) {
  switch (s) {
    case SpecialQuant::none: return "";
    case SpecialQuant::quest: return "+quest";
    case SpecialQuant::four_over_six: return "+4over6";
    case SpecialQuant::ms_eden: return "+ms-eden";
    case SpecialQuant::quartet_sr: return "+quartet-sr";
  }
  return "";
}

// "X=<spec>[+special] W=<spec> [rot=...] [delayed] [acc=e8m13:zero/128]"
std::string gemm_body(const GemmRecipe& g, const char* a, const char* b) {
  std::string r;
  r.append(a).append("=").append(operand(g.a)).append(special_text(g.a_special));
  r.append(" ").append(b).append("=").append(operand(g.b)).append(special_text(g.b_special));
  const char* signs = g.signs == BlockSigns::per_index ? "-random"
                      : g.signs == BlockSigns::fixed  ? "-te-signs"
                      : g.signs == BlockSigns::per_step ? "-step-signs"
                                                        : "";
  switch (g.rotation) {
    case RotationKind::none: break;
    case RotationKind::hadamard: r += " rot=hadamard"; break;
    case RotationKind::randomized: r += " rot=randomized"; break;
    case RotationKind::block_diagonal:
      r.append(" rot=block").append(std::to_string(g.rotation_block)).append(signs);
      break;
  }
  if (g.delayed) r += " delayed";
  if (const auto& acc = g.accumulation) {
    r.append(" acc=e").append(std::to_string(acc->exp_bits)).append("m").append(std::to_string(acc->man_bits));
    r.append(":").append(round_name(acc->round));
    if (acc->promote_every) r.append("/f32-every-").append(std::to_string(acc->promote_every));
  }
  return r;
}

std::string gemm_text(const char* name, const GemmRecipe& g, const char* a, const char* b) {
  return std::string(name) + " " + gemm_body(g, a, b);
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

GemmDescription describe_gemms(const LinearRecipe& r) {
  const std::string int8 = r.engine == LinearEngine::switchback_int8 ? " [int8 GEMM]" : "";
  GemmDescription d;
  d.fwd = gemm_body(r.fwd, "X", "W") + int8;
  const bool fwd_ops = r.backward_from_forward_operands;
  d.dgrad = gemm_body(r.dgrad, "dY", "W^T") + int8 + (fwd_ops ? " (W^T: the forward's quantized W)" : "");
  d.wgrad = gemm_body(r.wgrad, "dY^T", "X^T") + (r.wgrad_uses_quantized_x ? " (from the quantized X)" : "") +
            (fwd_ops ? " (X^T: the forward's quantized X)" : "");
  return d;
}

std::string describe(const LinearRecipe& r) {
  std::string s = r.engine == LinearEngine::switchback_int8 ? "[int8 GEMM] " : "";
  s += gemm_text("fwd", r.fwd, "X", "W") + "; " + gemm_text("dgrad", r.dgrad, "dY", "W^T") + "; " +
       gemm_text("wgrad", r.wgrad, "dY^T", "X^T");
  if (r.wgrad_uses_quantized_x) s += " (from the quantized X)";
  if (r.backward_from_forward_operands) s += " (backward from the forward's quantized W and X)";
  return s;
}

}  // namespace lowp::quant
