// One recipe language and one namespace (issue 28): a built-in name gives the same forward in
// evaluation and training, a file holds evaluation and training keys alike (each command names
// the keys it does not apply), duplicated keys and missing files are errors naming the line or
// the path.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <fstream>
#include <string>
#include <vector>

#include "lowp/accuracy/recipe.hpp"
#include "lowp/accuracy/train_linears.hpp"
#include "recipe/recipe_notes.hpp"
#include "recipe/train_recipe.hpp"
#include "support/test_support.hpp"

namespace lowp::train {
namespace {

using accuracy::LinearKind;
using test::expect_error;

std::string text(const std::optional<quant::QuantSpec>& s) { return s ? quant::describe(*s) : "f32"; }

// What evaluation runs in the forward of linear `kind` of layer `layer` (model/prepare.cpp):
// the recipe's weights/act specs, else its linear preset's fwd operands, padded under `pad`.
std::pair<std::string, std::string> eval_forward(const accuracy::Recipe& r, LinearKind kind, int layer) {
  const auto k = static_cast<std::size_t>(kind);
  const accuracy::LayerSpecs s = r.specs_at(layer);
  const quant::LinearRecipe* p = r.linear.empty() ? nullptr : &quant::linear_preset(r.linear);
  auto x = s.act[k] ? s.act[k] : (p ? p->fwd.a : std::nullopt);
  auto w = s.weights[k] ? s.weights[k] : (p ? p->fwd.b : std::nullopt);
  if (r.pad) {
    if (x) x->pad = true;
    if (w) w->pad = true;
  }
  return {text(x), text(w)};
}

TEST(OneLanguage, ANameSharedByEvaluationAndTrainingHasOneForward) {
  std::vector<std::string> shared;
  for (const accuracy::Recipe& e : accuracy::builtin_recipes())
    for (const TrainRecipe& t : builtin_train_recipes())
      if (e.name == t.name) shared.push_back(e.name);
  for (const char* must : {"fp32", "bf16", "mxfp8", "mxfp8-te", "nvfp4", "nvfp4-train", "fp8-tensorwise", "fp8-block128"})
    EXPECT_NE(std::find(shared.begin(), shared.end(), must), shared.end()) << must;
  for (const std::string& name : shared) {
    SCOPED_TRACE(name);
    const accuracy::Recipe e = accuracy::find_recipe(name);
    const TrainRecipe t = find_train_recipe(name);
    for (std::size_t k = 0; k < 7; ++k) {
      const auto kind = static_cast<LinearKind>(k);
      const quant::LinearRecipe l = linear_for(t, kind, 1, 4);
      const auto [x, w] = eval_forward(e, kind, 1);
      EXPECT_EQ(text(l.fwd.a), x) << accuracy::linear_kind_name(kind);
      EXPECT_EQ(text(l.fwd.b), w) << accuracy::linear_kind_name(kind);
      const quant::LinearRecipe* p = e.linear.empty() ? nullptr : &quant::linear_preset(e.linear);
      EXPECT_EQ(l.fwd.rotation, p ? p->fwd.rotation : hadamard::RotationKind::none);
      EXPECT_EQ(l.engine, p ? p->engine : quant::LinearEngine::emulated);
    }
  }
  // The two MX rules under their own names, the same in every command.
  const TrainRecipe floor = find_train_recipe("mxfp8"), te = find_train_recipe("mxfp8-te");
  EXPECT_EQ(floor.linear.wgrad.a->rule, quant::ScaleRule::mx);
  EXPECT_EQ(te.linear.wgrad.a->rule, quant::ScaleRule::mx_rceil);
  EXPECT_EQ(accuracy::train_recipe_linears("nvfp4").linear.name, "nvfp4");
  EXPECT_EQ(accuracy::train_recipe_linears("nvfp4-train").linear.name, "nvfp4-train");
}

TEST(OneLanguage, TrainingReadsTheForwardOperandsOfEvaluationKeys) {
  const TrainRecipe r = parse_train_recipe(R"(name = searched
linear = bf16
weights.wq = int4:row:int
act.wq = e4m3:tensor:amax
layer.1.weights.down = nvfp4
weights.classifier = int8:row:int
kv = int4:int
kv.group = head
attn.qk = e4m3:tensor:amax
weights.calibrate = gptq
dgrad = fp8-rowwise)");
  const auto spec = [](const char* s) { return quant::describe(quant::parse_quant_spec(s)); };
  const quant::LinearRecipe wq = linear_for(r, LinearKind::wq, 0, 2);
  EXPECT_EQ(text(wq.fwd.b), spec("int4:row:int"));
  EXPECT_EQ(text(wq.fwd.a), spec("e4m3:tensor:amax"));
  EXPECT_EQ(text(wq.dgrad.a), spec("e4m3:row:pow2"));  // the training keys still hold
  EXPECT_EQ(text(linear_for(r, LinearKind::down, 1, 2).fwd.b), spec("nvfp4"));
  EXPECT_EQ(text(linear_for(r, LinearKind::down, 0, 2).fwd.b), spec("bf16"));  // layer 1 only
  EXPECT_EQ(text(linear_for(r, LinearKind::classifier, 0, 2).fwd.b), spec("int8:row:int"));
  EXPECT_EQ(r.eval_only_keys, (std::vector<std::string>{"kv", "kv.group", "attn.qk", "weights.calibrate"}));
  // lowp.torch has one recipe for every module: the per-linear keys are named, not applied.
  const std::string path = ::testing::TempDir() + "lowp_one_language.recipe";
  std::ofstream(path) << r.text;
  const accuracy::TrainLinears t = accuracy::train_recipe_linears(path);
  EXPECT_EQ(text(t.linear.fwd.b), spec("bf16"));
  for (const char* key : {"weights.wq", "layer.1.weights.down", "kv.group", "'searched'", "lowp.torch"})
    EXPECT_NE(t.note_for_torch.find(key), std::string::npos) << key << " in " << t.note_for_torch;
  // ... but recipe-wide weights / act, the same for every linear, apply.
  std::ofstream(path) << "name = w\nweights = int8:row:int\nact = int8:row:int\noptimizer = adamw\n";
  const accuracy::TrainLinears u = accuracy::train_recipe_linears(path);
  EXPECT_EQ(text(u.linear.fwd.b), spec("int8:row:int"));
  EXPECT_EQ(text(u.linear.fwd.a), spec("int8:row:int"));
  EXPECT_NE(u.note_for_torch.find("optimizer does not apply"), std::string::npos) << u.note_for_torch;
  EXPECT_EQ(accuracy::train_recipe_linears("mxfp8").note_for_torch, "");  // a built-in: nothing to say
  std::filesystem::remove(path);
}

TEST(OneLanguage, EvaluationNamesTheTrainingKeysAndGoesOn) {
  std::vector<std::string> training_keys;
  const accuracy::Recipe r = accuracy::detail::parse_recipe_noting(
      "name = both\nlinear = mxfp8\npad = on\ndgrad = bf16\nwgrad.rotate = hadamard\noptimizer = adamw\n"
      "master = bf16\nlayer.2 = fp32\nlinear.down = bf16\nclassifier = bf16\nkeep_last = 1\nlayer.0.weights.wq = int8:row:int\n",
      training_keys);
  EXPECT_EQ(training_keys, (std::vector<std::string>{"dgrad", "wgrad.rotate", "optimizer", "master", "layer.2",
                                                       "linear.down", "classifier", "keep_last"}));
  EXPECT_EQ(r.linear, "mxfp8");
  EXPECT_TRUE(r.layer.at(0).weights[0]);
  // Keys of neither language are still errors, naming the line.
  expect_error([] { accuracy::parse_recipe("name = x\nwieghts = int8"); }, {"line 2", "unknown key 'wieghts'"});
  expect_error([] { parse_train_recipe("name = x\nwieghts = int8"); }, {"line 2", "unknown key 'wieghts'"});
}

TEST(OneLanguage, TrainingTakesEvaluationBuiltInsAndEvaluationRefusesTrainingOnlyOnes) {
  const TrainRecipe kv4 = find_train_recipe("kv4");
  EXPECT_EQ(kv4.eval_only_keys, (std::vector<std::string>{"kv", "kv.group"}));
  // act.ggml acts on a GGUF's stored blocks, which training has not: named as ignored, not
  // taken for a forward operand (the mutant in mind: is_forward_operand_key's "act." prefix).
  EXPECT_EQ(find_train_recipe("ggml-act").eval_only_keys, (std::vector<std::string>{"act.ggml"}));
  EXPECT_EQ(text(linear_for(find_train_recipe("mxfp4"), LinearKind::up, 0, 2).wgrad.b),
            quant::describe([] { auto s = quant::parse_quant_spec("mxfp4"); s.pad = true; return s; }()));
  expect_error([] { accuracy::find_recipe("bf16-pure"); }, {"'bf16-pure' is a training recipe"});
  expect_error([] { accuracy::find_recipe("quartet-fp4"); }, {"training recipe"});
}

TEST(OneLanguage, DuplicatedKeysAndMissingFilesAreErrorsNamingTheLineOrThePath) {
  for (const auto& parse : {std::function<void(std::string_view)>([](std::string_view t) { accuracy::parse_recipe(t); }),
                            std::function<void(std::string_view)>([](std::string_view t) { parse_train_recipe(t); })}) {
    expect_error([&] { parse("name = x\nlinear = bf16\n# c\nlinear = fp32\n"); },
                 {"line 4 'linear = fp32'", "key 'linear' is already set on line 2"});
    expect_error([&] { parse("name = x\nname = y\n"); }, {"line 2", "already set on line 1"});
  }
  expect_error([] { accuracy::find_recipe("no/such/recipe.txt"); }, {"recipe file 'no/such/recipe.txt' does not exist"});
  expect_error([] { find_train_recipe("missing.recipe"); }, {"file 'missing.recipe' does not exist"});
  expect_error([] { accuracy::find_recipe("nope"); }, {"unknown recipe 'nope'"});
}

}  // namespace
}  // namespace lowp::train
