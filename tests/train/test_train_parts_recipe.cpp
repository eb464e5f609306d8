// Training recipes: the built-in list, the per-linear lookup, recipe files composed per GEMM
// and per layer, their one-line errors, and the per-GEMM descriptions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "lowp/formats/registry.hpp"
#include "support/test_support.hpp"
#include "recipe/train_recipe.hpp"

namespace lowp::train {
namespace {

using accuracy::LinearKind;

TEST(TrainRecipe, BuiltinsInOrderAndRoundTrip) {
  const std::vector<std::string> want = {"fp32",         "bf16",         "bf16-pure",       "bf16-pure-sr",
                                         "fp8-tensorwise", "fp8-rowwise", "fp8-rowwise-gw-hp", "fp8-delayed",
                                         "fp8-current",  "mxfp8",        "mxfp8-te",        "fp8-block128",
                                         "nvfp4",        "nvfp4-train",  "quartet-fp4",  "quartet2-nvfp4", "switchback-int8", "scalify"};
  const auto all = builtin_train_recipes();
  ASSERT_EQ(all.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(all[i].name, want[i]);
    EXPECT_FALSE(all[i].note.empty()) << want[i];
    const TrainRecipe again = parse_train_recipe(all[i].text);
    EXPECT_EQ(again.name, all[i].name);
    EXPECT_EQ(quant::describe(again.linear), quant::describe(all[i].linear));
    EXPECT_EQ(find_train_recipe(want[i]).name, want[i]);
    EXPECT_EQ(again.scalify, want[i] == "scalify");
  }
}

TEST(TrainRecipe, EachRecipeSaysWhatItsPapersDo) {
  const auto d = [](const char* n) { return describe(find_train_recipe(n)); };
  // Every description names the three GEMMs, the high-precision parts and the optimizer.
  for (const TrainRecipe& r : builtin_train_recipes()) {
    if (r.scalify) continue;  // no float32 parts: its own lines below
    const std::string s = describe(r);
    for (const char* part : {"fwd ", "dgrad ", "wgrad ", "high precision: embedding", "attention matmuls", "moments"})
      EXPECT_NE(s.find(part), std::string::npos) << r.name << ": " << s;
  }
  EXPECT_NE(d("fp8-tensorwise").find("dY=float8_e5m2:tensor:amax"), std::string::npos);
  EXPECT_NE(d("fp8-delayed").find("delayed"), std::string::npos);
  EXPECT_NE(d("fp8-block128").find("acc=e8m13:zero/f32-every-128"), std::string::npos);
  EXPECT_NE(d("mxfp8-te").find("rceil"), std::string::npos);
  EXPECT_EQ(d("mxfp8").find("rceil"), std::string::npos);  // OCP floor scales, as lowp eval's mxfp8
  EXPECT_NE(d("bf16-pure-sr").find("master bf16 (stochastic rounding), moments bf16"), std::string::npos);
  EXPECT_NE(d("switchback-int8").find("[int8 GEMM]"), std::string::npos);
  // Scalify: E4M3 forward operands, E5M2 gradients, propagated scales, fp16 moments.
  const std::string sc = d("scalify");
  for (const char* part : {"fwd    X=float8_e4m3fn W=float8_e4m3fn", "Y stored float16", "no amax",
                           "dgrad  dY=float8_e5m2 W=float8_e4m3fn", "wgrad  dY^T=float8_e5m2 X=float8_e4m3fn",
                           "attention matmuls", "RMS rescale of the gradient leaving each RMSNorm", "moments fp16-scaled"})
    EXPECT_NE(sc.find(part), std::string::npos) << part << " in " << sc;
  // A recipe file storing the non-GEMM tensors in float16 (Scalify's FP8 experiments).
  const TrainRecipe f16 = parse_train_recipe("name = s\nmodel = scalify\nscalify.fwd = float16\nscalify.bwd = float16");
  EXPECT_EQ(f16.scalify_formats.fwd, lowp::parse_format("float16"));
  EXPECT_EQ(f16.scalify_formats.act, lowp::parse_format("e4m3"));
  EXPECT_NE(describe(f16).find("Y stored float16"), std::string::npos) << describe(f16);
  // NVFP4: the random Hadamard only on the wgrad line; stochastic rounding only on gradients.
  const TrainRecipe nv = find_train_recipe("nvfp4-train");
  const quant::GemmDescription g = quant::describe_gemms(nv.linear);
  EXPECT_EQ(g.fwd.find("rot="), std::string::npos);
  EXPECT_EQ(g.dgrad.find("rot="), std::string::npos);
  EXPECT_NE(g.wgrad.find("rot=block16-te-signs"), std::string::npos) << g.wgrad;  // TE's fixed signs
  EXPECT_EQ(g.fwd.find("stochastic"), std::string::npos);
  EXPECT_NE(g.dgrad.find("dY=float4_e2m1fn:b16:nvfp4:stochastic"), std::string::npos) << g.dgrad;
  EXPECT_NE(g.dgrad.find("W^T=float4_e2m1fn:t16:nvfp4:nearest"), std::string::npos) << g.dgrad;
  const auto q1 = quant::describe_gemms(find_train_recipe("quartet-fp4").linear);
  EXPECT_NE(q1.fwd.find("+quest"), std::string::npos);
  EXPECT_NE(q1.dgrad.find("+quartet-sr"), std::string::npos) << q1.dgrad;
  EXPECT_NE(q1.dgrad.find("rot=block32-step-signs"), std::string::npos) << q1.dgrad;
  EXPECT_NE(q1.wgrad.find("the forward's quantized X"), std::string::npos) << q1.wgrad;
  const auto q2 = quant::describe_gemms(find_train_recipe("quartet2-nvfp4").linear);
  EXPECT_NE(q2.fwd.find("+4over6"), std::string::npos);
  EXPECT_NE(q2.wgrad.find("+ms-eden"), std::string::npos);
}

// quartet-fp4 and nvfp4's wgrad spelled out in a recipe file: the keys reach every field the
// presets set (the GEMM descriptions, which print them all, agree).
TEST(TrainRecipe, FileSpellsTheQuartetAndTeSigns) {
  const TrainRecipe q = parse_train_recipe(R"(name = q
linear = mxfp4
fwd.rotate = block32
fwd.x.quantizer = quest
fwd.w.quantizer = quest
dgrad.dy = e2m1:b32:mx:stochastic
dgrad.w = e2m1:b32:mx:stochastic
wgrad.dy = e2m1:b32:mx:stochastic
wgrad.x = e2m1:b32:mx:stochastic
dgrad.rotate = step-block32
dgrad.dy.quantizer = quartet-sr
dgrad.w.quantizer = quartet-sr
wgrad.rotate = step-block32
wgrad.dy.quantizer = quartet-sr
wgrad.x.quantizer = quartet-sr
backward_from_forward = on)");
  const auto got = quant::describe_gemms(q.linear), want = quant::describe_gemms(quant::linear_preset("quartet-fp4"));
  EXPECT_EQ(got.fwd, want.fwd);
  EXPECT_EQ(got.dgrad, want.dgrad);
  EXPECT_EQ(got.wgrad, want.wgrad);
  const TrainRecipe te = parse_train_recipe("name = t\nlinear = nvfp4-train\nwgrad.rotate = te-block16");
  EXPECT_EQ(te.linear.wgrad.signs, quant::BlockSigns::fixed);
  EXPECT_EQ(quant::describe_gemms(te.linear).wgrad, quant::describe_gemms(quant::linear_preset("nvfp4-train")).wgrad);
  test::expect_error([] { parse_train_recipe("name = x\nwgrad.rotate = te-block32"); }, {"16-blocks"});
}

TEST(TrainRecipe, OptimizerSettings) {
  OptimizerConfig c;
  apply_optimizer_settings(find_train_recipe("bf16-pure-sr"), c);
  EXPECT_EQ(c.master, MasterFormat::bf16);
  EXPECT_TRUE(c.master_stochastic);
  EXPECT_EQ(c.moments, MomentFormat::bf16);
  apply_optimizer_settings(find_train_recipe("bf16-pure"), c);
  EXPECT_FALSE(c.master_stochastic);
  apply_optimizer_settings(find_train_recipe("fp8-rowwise"), c);
  EXPECT_EQ(c.master, MasterFormat::fp32);
  EXPECT_EQ(c.moments, MomentFormat::fp32);
}

TEST(TrainRecipe, FileComposedPerGemmAndPerLayer) {
  const TrainRecipe r = parse_train_recipe(R"(# mine
name = mine
note = fp8 rows, f32 wgrad, first and last layers bf16
linear = fp8-rowwise
wgrad = fp32
fwd.x = e4m3:tensor
dgrad.rotate = random-block16
dgrad.accumulator = e5m10:nearest/64
linear.down = bf16
layer.2 = nvfp4-train
keep_first = 1
keep_last = 1
keep = fp32
classifier = bf16
optimizer = stable-adamw
moments = e4m3-scaled
)");
  EXPECT_EQ(r.name, "mine");
  EXPECT_EQ(r.linear.name, "mine");
  EXPECT_FALSE(r.linear.wgrad.a || r.linear.wgrad.b);
  ASSERT_TRUE(r.linear.fwd.a && r.linear.fwd.b);
  EXPECT_EQ(r.linear.fwd.a->granularity, quant::Granularity::tensor);
  EXPECT_EQ(r.linear.fwd.b->granularity, quant::Granularity::row);
  EXPECT_EQ(r.linear.dgrad.rotation, hadamard::RotationKind::block_diagonal);
  EXPECT_EQ(r.linear.dgrad.rotation_block, 16u);
  EXPECT_EQ(r.linear.dgrad.signs, quant::BlockSigns::per_index);
  ASSERT_TRUE(r.linear.dgrad.accumulation);
  EXPECT_EQ(r.linear.dgrad.accumulation->exp_bits, 5);
  EXPECT_EQ(r.linear.dgrad.accumulation->man_bits, 10);
  EXPECT_EQ(r.linear.dgrad.accumulation->round, Round::nearest_even);
  EXPECT_EQ(r.linear.dgrad.accumulation->promote_every, 64u);
  EXPECT_EQ(r.optimizer, OptimizerKind::stable_adamw);
  EXPECT_EQ(r.moments, MomentFormat::e4m3_scaled);
  // 5 layers: 0 and 4 kept in fp32, layer 2 nvfp4-train, down_proj bf16 elsewhere.
  EXPECT_EQ(linear_for(r, LinearKind::wq, 0, 5).name, "fp32");
  EXPECT_EQ(linear_for(r, LinearKind::wq, 4, 5).name, "fp32");
  EXPECT_EQ(linear_for(r, LinearKind::wq, 1, 5).name, "mine");
  EXPECT_EQ(linear_for(r, LinearKind::down, 1, 5).name, "bf16");
  EXPECT_EQ(linear_for(r, LinearKind::down, 2, 5).name, "nvfp4-train");
  EXPECT_EQ(linear_for(r, LinearKind::classifier, 2, 5).name, "bf16");
  EXPECT_NE(describe(r).find("first 1 layer(s): fp32; last 1 layer(s): fp32"), std::string::npos) << describe(r);

  // The same from a file by path.
  const std::string path = testing::TempDir() + "trainq_recipe.txt";
  std::ofstream(path) << r.text;
  EXPECT_EQ(find_train_recipe(path).linear.name, "mine");
  std::remove(path.c_str());
}

TEST(TrainRecipe, BadInputIsOneLine) {
  using test::expect_error;
  expect_error([] { parse_train_recipe("name = x\nlinear = fp9"); }, {"line 2", "'linear = fp9'", "unknown linear preset"});
  expect_error([] { parse_train_recipe("name = x\nbogus = 1"); }, {"line 2", "unknown key 'bogus'"});
  expect_error([] { parse_train_recipe("name = x\nmodel = scalyfy"); }, {"line 2", "model is linears", "'scalyfy'"});
  expect_error([] { parse_train_recipe("name = x\nmodel = scalify\nscalify.acts = e4m3"); }, {"line 3", "unknown key 'scalify.acts'"});
  expect_error([] { parse_train_recipe("name = x\nmodel = scalify\nscalify.act = e9m9"); }, {"line 3", "e9m9"});
  expect_error([] { parse_train_recipe("name = x\nscalify.fwd = float16"); }, {"scalify.* keys need `model = scalify`"});
  EXPECT_TRUE(parse_train_recipe("name = x\nmodel = scalify").scalify);
  EXPECT_FALSE(parse_train_recipe("name = x\nmodel = linears").scalify);
  // A key given twice is an error naming both lines, not a silent override.
  expect_error([] { parse_train_recipe("name = x\nmodel = scalify\nmodel = linears"); },
               {"line 3 'model = linears'", "key 'model' is already set on line 2"});
  expect_error([] { parse_train_recipe("name = x\nfwd.q = e4m3"); }, {"unknown key 'fwd.q'", "x, w"});
  expect_error([] { parse_train_recipe("name = x\nfwd.x = e9m9"); }, {"line 2", "e9m9"});
  expect_error([] { parse_train_recipe("name = x\nwgrad.rotate = spin"); }, {"random-block<N>"});
  expect_error([] { parse_train_recipe("name = x\nfwd.accumulator = e9m3"); }, {"accumulator"});
  expect_error([] { parse_train_recipe("name = x\nkeep_last = two"); }, {"keep_last", "'two'"});
  expect_error([] { parse_train_recipe("name = x\nmaster = fp8"); }, {"master weight format", "fp8"});
  expect_error([] { parse_train_recipe("name = x\nlinear.attn = bf16"); }, {"unknown linear 'attn'"});
  expect_error([] { parse_train_recipe("linear = bf16"); }, {"no `name"});
  expect_error([] { parse_train_recipe("name = x\nno equals sign"); }, {"line 2", "key = value"});
  // A combination QuantLinear cannot run: the int8 GEMM with a float32 operand.
  expect_error([] { parse_train_recipe("name = x\nlinear = switchback-int8\nfwd.x = f32"); },
               {"train recipe 'x'", "int8"});
  expect_error([] { parse_train_recipe("name = x\ndgrad.dy.quantizer = quest\ndgrad.dy = e2m1:b32"); },
               {"quest", "forward"});
  expect_error([] { find_train_recipe("no-such-recipe"); }, {"unknown train recipe 'no-such-recipe'", "quartet2-nvfp4"});
}

// fp8-block128 pads (`pad = on`): the default config's K/V projections have 64 outputs, half a
// 128x128 weight tile. Padding must act as explicit zero rows: the 64-output layer gives the
// first 64 outputs of the same layer with its weight zero-extended to 128 rows.
TEST(TrainRecipe, PaddedBlocksActAsExplicitZeros) {
  const TrainRecipe r = find_train_recipe("fp8-block128");
  EXPECT_NE(describe(r).find("zero-padded"), std::string::npos);
  const quant::LinearRecipe& wk = linear_for(r, LinearKind::wk, 1, 4);
  const std::size_t M = 128, K = 128, N = 64;
  std::vector<float> X(M * K), W(N * K), Wz(2 * N * K, 0.0f);
  for (std::size_t i = 0; i < X.size(); ++i) X[i] = std::sin(0.37f * static_cast<float>(i)) * (1 + i % 7);
  for (std::size_t i = 0; i < W.size(); ++i) W[i] = Wz[i] = 0.02f * std::cos(0.11f * static_cast<float>(i) + 1);
  quant::QuantLinear half(wk, K, N, false), full(wk, K, 2 * N, false);
  half.weight() = W;
  full.weight() = Wz;
  std::vector<float> Y(M * N), Yz(M * 2 * N);
  half.forward(X.data(), M, Y.data());
  full.forward(X.data(), M, Yz.data());
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t n = 0; n < N; ++n) ASSERT_EQ(Y[m * N + n], Yz[m * 2 * N + n]) << m << "," << n;
  // Without `pad = on` the same shape is refused, naming the tile.
  const TrainRecipe strict = parse_train_recipe("name = strict\nlinear = fp8-block128\n");
  quant::QuantLinear refused(linear_for(strict, LinearKind::wk, 1, 4), K, N, false);
  refused.weight() = W;
  try {
    refused.forward(X.data(), M, Y.data());
    ADD_FAILURE() << "a 64-row weight in 128x128 tiles ran without padding";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tile"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lowp::train
