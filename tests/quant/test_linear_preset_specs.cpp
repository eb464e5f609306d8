// Every linear preset's six operand quantizers, field by field, against a table written here
// from the paper or library each preset names (and docs/quantization.md's preset table). The
// accuracy test (test_linear_presets.cpp) bounds each preset's error, but a bound cannot tell
// E4M3 from E5M2 gradients or an MXFP8 from an MXFP6 one; this table can. Formats are given by
// their fields (exponent and mantissa bits, bias, special values, largest value), not by the
// names the presets are built from, so a preset built from a wrong name fails here.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "lowp/quant/linear.hpp"

namespace lowp::quant {
namespace {

using hadamard::RotationKind;
using G = Granularity;
using R = ScaleRule;

struct Fmt {
  const char* name;
  Kind kind;
  int exp_bits, man_bits, bias;
  Specials specials;
  double max;
};
// OCP 8-bit floating point (E4M3: no Inf, one NaN magnitude; E5M2: IEEE-like), OCP MX v1.0's
// FP6 E2M3 and FP4 E2M1 (no Inf or NaN), bfloat16, symmetric int8 [-127, 127].
constexpr Fmt kE4M3{"E4M3", Kind::floating, 4, 3, 7, Specials::fn, 448.0};
constexpr Fmt kE5M2{"E5M2", Kind::floating, 5, 2, 15, Specials::ieee, 57344.0};
constexpr Fmt kE2M3{"E2M3", Kind::floating, 2, 3, 1, Specials::finite, 7.5};
constexpr Fmt kE2M1{"E2M1", Kind::floating, 2, 1, 1, Specials::finite, 6.0};
constexpr Fmt kBF16{"BF16", Kind::floating, 8, 7, 127, Specials::ieee, 0x1.fep127};
constexpr Fmt kINT8{"INT8", Kind::integer, 0, 8, 0, Specials::ieee, 127.0};

struct Op {
  Fmt fmt;
  G granularity;
  std::size_t block;
  R rule;
  Round round = Round::nearest_even;
  SpecialQuant special = SpecialQuant::none;
};
struct Gemm {
  std::optional<Op> a, b;  // nullopt: float32
  RotationKind rotation = RotationKind::none;
  std::size_t rotation_block = 0;
  BlockSigns signs = BlockSigns::none;
  bool delayed = false;
};
struct Expected {
  const char* name;
  Gemm fwd, dgrad, wgrad;  // (X, W), (dY, W^T), (dY^T, X^T)
  LinearEngine engine = LinearEngine::emulated;
  bool wgrad_uses_quantized_x = false, backward_from_forward_operands = false;
};

Op op(Fmt f, G g, std::size_t block, R r, Round round = Round::nearest_even, SpecialQuant s = SpecialQuant::none) {
  return {f, g, block, r, round, s};
}
Gemm same(const Op& o) { return {o, o}; }

// What each preset claims (its note, docs/quantization.md's table) and the source it follows.
std::vector<Expected> expected() {
  const Op bf16 = op(kBF16, G::tensor, 0, R::none);
  const Op e4_tensor = op(kE4M3, G::tensor, 0, R::amax), e5_tensor = op(kE5M2, G::tensor, 0, R::amax);
  // torchao Float8LinearRecipeName.ROWWISE (torchao/float8/config.py): input, weight and
  // grad_output AXISWISE with target_dtype e4m3, round_scales_to_power_of_2=True; the axis is
  // each GEMM's reduction dimension, so one power-of-two scale per row of every operand.
  const Op e4_row_pow2 = op(kE4M3, G::row, 0, R::amax_pow2);
  // DeepSeek-V3 (arXiv 2412.19437, 3.3.2): E4M3 on every tensor; 1x128 tiles of activations and
  // gradients along the reduction, 128x128 weight blocks, the wgrad's operands in 128-blocks
  // along the tokens; scales from the current amax.
  const Op e4_b128 = op(kE4M3, G::block, 128, R::amax), e4_t128 = op(kE4M3, G::tile, 128, R::amax);
  // OCP MX v1.0: 32-element blocks, E8M0 scale 2^(floor(log2 amax) - emax_elem) (6.3).
  const Op mx8 = op(kE4M3, G::block, 32, R::mx), mx6 = op(kE2M3, G::block, 32, R::mx),
           mx4 = op(kE2M1, G::block, 32, R::mx);
  // TransformerEngine MXFP8BlockScaling: E4M3 on every operand (its default Format.E4M3),
  // RCEIL E8M0 scales per 32.
  const Op mx8_rceil = op(kE4M3, G::block, 32, R::mx_rceil);
  // NVFP4: E2M1, 16-element blocks, UE4M3 block scales under a float32 tensor scale.
  const Op nv = op(kE2M1, G::block, 16, R::nvfp4);
  // NVIDIA, "Pretraining LLMs with NVFP4" (arXiv 2509.25149): 16x16 weight tiles, 1x16
  // activation and gradient blocks, stochastic rounding of the gradients only, a 16-point
  // random Hadamard transform on the wgrad's operands only (TransformerEngine: fixed signs).
  const Op nv_tile = op(kE2M1, G::tile, 16, R::nvfp4), nv_sr = op(kE2M1, G::block, 16, R::nvfp4, Round::stochastic);
  // Quartet (arXiv 2505.14669, IST-DASLab/Quartet): forward MXFP4 with QuEST after a 32-block
  // Hadamard; backward E2M1 in 32-blocks, stochastic, Quartet's own scale, after a 32-block
  // Hadamard with one random sign vector per backward pass.
  const Op quest = op(kE2M1, G::block, 32, R::mx, Round::nearest_even, SpecialQuant::quest);
  const Op qsr = op(kE2M1, G::block, 32, R::mx, Round::stochastic, SpecialQuant::quartet_sr);
  const Op fullrot_sr = op(kE2M1, G::block, 32, R::mx_rceil, Round::stochastic);
  // Quartet II (Panferov et al. 2026): forward NVFP4 with the 4-over-6 block choice; backward
  // NVFP4 with MS-EDEN after a 16-point random Hadamard transform.
  const Op four6 = op(kE2M1, G::block, 16, R::nvfp4, Round::nearest_even, SpecialQuant::four_over_six);
  const Op eden = op(kE2M1, G::block, 16, R::nvfp4, Round::nearest_even, SpecialQuant::ms_eden);
  // SwitchBack (Wortsman et al. 2023, bitsandbytes): int8 absmax, X and dY per row, W per
  // tensor (vector-wise: per row of W forward, per row of W^T in the dgrad); bf16 wgrad.
  const Op i8_row = op(kINT8, G::row, 0, R::absmax_int), i8_tensor = op(kINT8, G::tensor, 0, R::absmax_int);

  const Gemm f32{};
  std::vector<Expected> v;
  v.push_back({"fp32", f32, f32, f32});
  v.push_back({"bf16", same(bf16), same(bf16), same(bf16)});
  // torchao TENSORWISE (Float8LinearConfig defaults): input and weight E4M3, grad_output E5M2,
  // dynamic per-tensor scales, no power-of-two rounding.
  v.push_back({"fp8-tensorwise", same(e4_tensor), {e5_tensor, e4_tensor}, {e5_tensor, e4_tensor}});
  v.push_back({"fp8-rowwise", same(e4_row_pow2), same(e4_row_pow2), same(e4_row_pow2)});
  // torchao ROWWISE_WITH_GW_HP: the same forward; the dgrad's W TENSORWISE
  // (cast_config_weight_for_grad_input; E4M3 and power-of-two like the rest); the wgrad's
  // operands in high precision.
  v.push_back({"fp8-rowwise-gw-hp", same(e4_row_pow2), {e4_row_pow2, op(kE4M3, G::tensor, 0, R::amax_pow2)}, f32});
  // TransformerEngine DelayedScaling, Format.HYBRID: E4M3 forward, E5M2 gradients.
  Gemm fwd_delayed = same(e4_tensor), bwd_delayed{e5_tensor, e4_tensor};
  fwd_delayed.delayed = bwd_delayed.delayed = true;
  v.push_back({"fp8-delayed", fwd_delayed, bwd_delayed, bwd_delayed});
  v.push_back({"fp8-block128", {e4_b128, e4_t128}, {e4_b128, e4_t128}, same(e4_b128)});
  v.push_back({"mxfp8", same(mx8), same(mx8), same(mx8)});
  v.push_back({"mxfp8-te", same(mx8_rceil), same(mx8_rceil), same(mx8_rceil)});
  v.push_back({"mxfp6", same(mx6), same(mx6), same(mx6)});
  v.push_back({"mxfp4", same(mx4), same(mx4), same(mx4)});
  v.push_back({"nvfp4", same(nv), same(nv), same(nv)});
  v.push_back({"nvfp4-train", {nv, nv_tile}, {nv_sr, nv_tile},
               {nv_sr, nv, RotationKind::block_diagonal, 16, BlockSigns::fixed}});
  {
    Expected e{"quartet-fp4", {quest, quest, RotationKind::block_diagonal, 32},
               {qsr, qsr, RotationKind::block_diagonal, 32, BlockSigns::per_step},
               {qsr, qsr, RotationKind::block_diagonal, 32, BlockSigns::per_step}};
    e.backward_from_forward_operands = true;  // Quartet re-quantizes the forward's W and X
    v.push_back(e);
  }
  // lowp's earlier Quartet backward (not Quartet's code): RCEIL MXFP4, SR, a random-sign
  // Hadamard over the whole reduction dimension.
  v.push_back({"quartet-fp4-fullrot", {quest, quest, RotationKind::block_diagonal, 32},
               {fullrot_sr, fullrot_sr, RotationKind::randomized}, {fullrot_sr, fullrot_sr, RotationKind::randomized}});
  v.push_back({"quartet2-nvfp4", same(four6), {eden, eden, RotationKind::block_diagonal, 16, BlockSigns::per_index},
               {eden, eden, RotationKind::block_diagonal, 16, BlockSigns::per_index}});
  const Gemm sb{i8_row, i8_tensor}, sb_vec{i8_row, i8_row};
  v.push_back({"switchback-int8", sb, sb, same(bf16), LinearEngine::switchback_int8});
  v.push_back({"switchback-int8-vectorwise", sb_vec, sb_vec, same(bf16), LinearEngine::switchback_int8});
  v.push_back({"switchback-int8-memeff", sb, sb, same(bf16), LinearEngine::switchback_int8, true});
  return v;
}

void expect_operand(const std::optional<QuantSpec>& got, SpecialQuant got_special, const std::optional<Op>& want,
                    const std::string& where) {
  ASSERT_EQ(got.has_value(), want.has_value()) << where << (want ? ": expected quantized" : ": expected float32");
  if (!want) {
    EXPECT_EQ(got_special, SpecialQuant::none) << where;
    return;
  }
  const Format& f = got->format;
  const Fmt& w = want->fmt;
  EXPECT_EQ(f.kind, w.kind) << where << " (" << w.name << ")";
  if (w.kind == Kind::floating) {
    EXPECT_EQ(f.exp_bits, w.exp_bits) << where << " (" << w.name << ")";
    EXPECT_EQ(f.man_bits, w.man_bits) << where << " (" << w.name << ")";
    EXPECT_EQ(f.bias, w.bias) << where << " (" << w.name << ")";
    EXPECT_EQ(f.specials, w.specials) << where << " (" << w.name << ")";
    EXPECT_TRUE(f.subnormals) << where;
  } else {
    EXPECT_EQ(f.man_bits, w.man_bits) << where << " (" << w.name << ")";  // the width
    EXPECT_EQ(f.int_min, -127) << where << " (" << w.name << ")";
    EXPECT_EQ(f.int_max, 127) << where << " (" << w.name << ")";
  }
  EXPECT_TRUE(f.is_signed) << where;
  EXPECT_EQ(f.max_finite(), w.max) << where << " (" << w.name << ")";
  EXPECT_EQ(got->granularity, want->granularity) << where;
  EXPECT_EQ(got->block, want->block) << where;
  EXPECT_EQ(got->rule, want->rule) << where;
  EXPECT_EQ(got->cast.round, want->round) << where;
  EXPECT_TRUE(got->cast.saturate) << where;  // every preset saturates (torchao's to_fp8_saturated)
  EXPECT_FALSE(got->cast.flush_subnormals) << where;
  EXPECT_FALSE(got->pad) << where;
  EXPECT_EQ(got_special, want->special) << where;
}

void expect_gemm(const GemmRecipe& got, const Gemm& want, const std::string& where, const char* a, const char* b) {
  expect_operand(got.a, got.a_special, want.a, where + " " + a);
  expect_operand(got.b, got.b_special, want.b, where + " " + b);
  EXPECT_EQ(got.rotation, want.rotation) << where;
  EXPECT_EQ(got.rotation_block, want.rotation_block) << where;
  EXPECT_EQ(got.signs, want.signs) << where;
  EXPECT_EQ(got.delayed, want.delayed) << where;
}

TEST(LinearPresetSpecs, EveryOperandAsItsSourceSpecifies) {
  const std::vector<Expected> table = expected();
  ASSERT_EQ(table.size(), linear_presets().size()) << "a preset without a row here, or a row without a preset";
  for (const Expected& e : table) {
    SCOPED_TRACE(e.name);
    const LinearRecipe& r = linear_preset(e.name);
    expect_gemm(r.fwd, e.fwd, std::string(e.name) + " fwd", "X", "W");
    expect_gemm(r.dgrad, e.dgrad, std::string(e.name) + " dgrad", "dY", "W^T");
    expect_gemm(r.wgrad, e.wgrad, std::string(e.name) + " wgrad", "dY^T", "X^T");
    EXPECT_EQ(r.engine, e.engine);
    EXPECT_EQ(r.wgrad_uses_quantized_x, e.wgrad_uses_quantized_x);
    EXPECT_EQ(r.backward_from_forward_operands, e.backward_from_forward_operands);
    // The accumulator: float32 except DeepSeek-V3's (about 14 bits kept by the H800's FP8
    // accumulation, promoted into float32 every N_C = 128 products).
    for (const GemmRecipe* g : {&r.fwd, &r.dgrad, &r.wgrad}) {
      if (std::string(e.name) != "fp8-block128") {
        EXPECT_FALSE(g->accumulation.has_value());
        continue;
      }
      ASSERT_TRUE(g->accumulation.has_value());
      EXPECT_EQ(g->accumulation->man_bits, 13);  // 14 significant bits
      EXPECT_EQ(g->accumulation->exp_bits, 8);
      EXPECT_EQ(g->accumulation->promote_every, 128u);
    }
  }
  // TransformerEngine's DelayedScaling defaults: amax_history_len 1024, amax_compute_algo max, margin 0.
  const DelayedScalingConfig& d = linear_preset("fp8-delayed").delayed_scaling;
  EXPECT_EQ(d.history_len, 1024u);
  EXPECT_EQ(d.reduce, AmaxReduce::max);
  EXPECT_EQ(d.margin, 0);
}

}  // namespace
}  // namespace lowp::quant
