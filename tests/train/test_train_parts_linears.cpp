// lowp/accuracy/train_linears.hpp: the public view of a training recipe's linears (what
// lowp.torch.Linear runs), against the recipe texts of train_recipe.cpp and recipe files.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "lowp/accuracy/train_linears.hpp"
#include "lowp/numerics/error.hpp"
#include "recipe/train_recipe.hpp"

namespace lowp::accuracy {
namespace {

TEST(TrainLinears, NamesAreTheBuiltinsInOrder) {
  std::vector<std::string> want;
  for (const auto& r : lowp::train::builtin_train_recipes()) want.push_back(r.name);
  EXPECT_EQ(train_recipe_names(), want);
}

TEST(TrainLinears, EachRecipeGivesItsLayerLinear) {
  // `linear = <preset>` in the built-in texts: the layers run that preset.
  const std::pair<const char*, const char*> cases[] = {
      {"fp32", "fp32"},         {"fp8-current", "fp8-tensorwise"}, {"mxfp8", "mxfp8"},
      {"mxfp8-te", "mxfp8-te"}, {"nvfp4", "nvfp4"},                {"nvfp4-train", "nvfp4-train"},
      {"quartet-fp4", "quartet-fp4"}, {"switchback-int8", "switchback-int8"}};
  for (const auto& [recipe, preset] : cases) {
    const TrainLinears t = train_recipe_linears(recipe);
    EXPECT_EQ(t.name, recipe);
    EXPECT_EQ(t.linear.name, preset) << recipe;
    // The MX and NVFP4 names pad (`pad = on`), as their evaluation recipes do: the preset's specs + :pad.
    const std::string_view n = recipe;
    const bool padded = n == "mxfp8" || n == "mxfp8-te" || n == "nvfp4" || n == "nvfp4-train";
    quant::LinearRecipe want = quant::linear_preset(preset);
    for (quant::GemmRecipe* g : {&want.fwd, &want.dgrad, &want.wgrad})
      for (auto* op : {&g->a, &g->b})
        if (*op && padded) (*op)->pad = true;
    EXPECT_EQ(quant::describe(t.linear), quant::describe(want)) << recipe;
    EXPECT_EQ(t.keep.name, "bf16") << recipe;
  }
  EXPECT_EQ(train_recipe_linears("switchback-int8").linear.engine, quant::LinearEngine::switchback_int8);
}

TEST(TrainLinears, RecipeFileKeepsAndScalifyRefused) {
  const std::string path = ::testing::TempDir() + "lowp_train_linears.recipe";
  {
    std::ofstream f(path);
    f << "name = mine\nlinear = fp8-rowwise\nkeep_first = 1\nkeep_last = 2\nkeep = fp32\n";
  }
  const TrainLinears t = train_recipe_linears(path);
  std::remove(path.c_str());
  EXPECT_EQ(t.name, "mine");
  EXPECT_EQ(t.linear.name, "fp8-rowwise");
  EXPECT_EQ(t.keep.name, "fp32");
  EXPECT_EQ(t.keep_first, 1u);
  EXPECT_EQ(t.keep_last, 2u);
  EXPECT_THROW(train_recipe_linears("scalify"), Error);
  EXPECT_THROW(train_recipe_linears("no-such-recipe"), Error);
}

}  // namespace
}  // namespace lowp::accuracy
