// The recipe text format, the built-in list and the lookup.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "lowp/accuracy/recipe.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/quant/linear.hpp"
#include "model_files.hpp"

namespace {

using namespace lowp::accuracy;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const lowp::Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Recipe, ParsesEveryKey) {
  const Recipe r = parse_recipe(R"(# a comment line
name = mine
note = some words # not a comment
linear = mxfp4
weights = e4m3:row
weights.classifier = bf16
act.down = e5m2
attn.qk = e4m3:tensor:amax
attn.p = e4m3:none
attn.v = e4m3
kv = int4:b32:int
kv.group = head
attn.rotate = hadamard
attn.rotate_v = on
quarot = on
seed = 42
pad = on
)");
  EXPECT_EQ(r.name, "mine");
  EXPECT_EQ(r.note, "some words # not a comment");
  EXPECT_EQ(r.linear, "mxfp4");
  for (std::size_t i = 0; i < 7; ++i) {
    ASSERT_TRUE(r.weights[i]);
    EXPECT_EQ(lowp::quant::describe(*r.weights[i]), "float8_e4m3fn:row:amax:nearest:sat");
  }
  EXPECT_EQ(lowp::quant::describe(*r.weights[7]), "bfloat16:tensor:none:nearest:sat");
  EXPECT_FALSE(r.act[0]);
  EXPECT_TRUE(r.act[static_cast<std::size_t>(LinearKind::down)]);
  EXPECT_TRUE(r.q && r.k && r.p && r.v && r.kv);
  EXPECT_EQ(r.p->rule, lowp::quant::ScaleRule::none);
  EXPECT_EQ(r.attn_rotate, AttnRotation::hadamard);
  EXPECT_TRUE(r.rotate_v);
  EXPECT_TRUE(r.quarot);
  EXPECT_EQ(r.seed, 42u);
  EXPECT_TRUE(r.pad);
  EXPECT_TRUE(r.kv_per_head);
  EXPECT_FALSE(r.is_identity());
}

TEST(Recipe, TextRoundTripsForEveryBuiltin) {
  for (const Recipe& r : builtin_recipes()) {
    const std::string text = to_text(r);
    EXPECT_EQ(to_text(parse_recipe(text)), text) << r.name;
  }
}

TEST(Recipe, BuiltinsAreUniqueAndCoverTheDefaultSweep) {
  std::set<std::string> names;
  for (const Recipe& r : builtin_recipes()) {
    EXPECT_TRUE(names.insert(r.name).second) << r.name;
    EXPECT_FALSE(r.note.empty()) << r.name;
    EXPECT_EQ(r.note.find('\n'), std::string::npos) << r.name;
    if (!r.linear.empty()) {
      EXPECT_NO_THROW(lowp::quant::linear_preset(r.linear)) << r.name;
    }
  }
  const auto sweep = default_sweep_recipes();
  EXPECT_EQ(sweep.size(), 19u);
  for (const auto& n : sweep) EXPECT_TRUE(names.count(n)) << n;
  for (const char* n : {"fp32", "bf16", "fp16", "fp8-tensorwise", "fp8-rowwise", "fp8-block128", "mxfp8", "mxfp6",
                        "mxfp4", "nvfp4", "switchback-int8", "fp8-attn", "fp8-attn-hadamard", "fp8-attn-fa3", "kv4", "kv4-hadamard", "mxfp8-rceil", "mxfp6-rceil",
                        "mxfp4-rceil"})
    EXPECT_TRUE(names.count(n)) << n;
  EXPECT_TRUE(find_recipe("fp32").is_identity());
}

TEST(Recipe, MalformedTextNamesTheLine) {
  EXPECT_EQ(error_of([] { parse_recipe("name = x\nbogus = 1\n"); }),
            "recipe line 2 'bogus = 1': unknown key 'bogus'");
  EXPECT_EQ(error_of([] { parse_recipe("name = x\nno equals sign\n"); }),
            "recipe line 2 'no equals sign': expected `key = value`");
  EXPECT_EQ(error_of([] { parse_recipe("name = x\nweights.wz = e4m3\n"); }),
            "recipe line 2 'weights.wz = e4m3': unknown linear 'wz' (wq, wk, wv, wo, gate, up, down, classifier)");
  EXPECT_EQ(error_of([] { parse_recipe("name = x\nquarot = maybe\n"); }),
            "recipe line 2 'quarot = maybe': quarot is on or off, not 'maybe'");
  EXPECT_NE(error_of([] { parse_recipe("name = x\nkv = e9m9\n"); }).find("recipe line 2 'kv = e9m9': quantization spec 'e9m9'"),
            std::string::npos);
  EXPECT_EQ(error_of([] { parse_recipe("kv = e4m3\n"); }), "recipe: no `name = ...` line");
  EXPECT_EQ(error_of([] { parse_recipe("name = x\nlinear = fp5\n"); }).find("recipe line 2 'linear = fp5': "), 0u);
  EXPECT_EQ(error_of([] { parse_recipe("name = x\nkv.group = head\n"); }), "recipe 'x': kv.group = head needs a kv spec");
  EXPECT_EQ(error_of([] { parse_recipe("name = x\nkv.group = token\n"); }),
            "recipe line 2 'kv.group = token': kv.group is head or spec, not 'token'");
  EXPECT_EQ(error_of([] { parse_recipe("name = x\nattn.rotate_v = on\n"); }),
            "recipe 'x': attn.rotate_v = on needs attn.rotate = hadamard or randomized");
}

TEST(Recipe, FindByNameOrFile) {
  EXPECT_EQ(find_recipe("mxfp4").name, "mxfp4");
  const std::string err = error_of([] { find_recipe("nope"); });
  EXPECT_EQ(err.find("unknown recipe 'nope'"), 0u) << err;
  EXPECT_NE(err.find("fp8-attn-hadamard"), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos);

  const std::string dir = lowp::test::temp_dir("recipe_file");
  lowp::test::write_text(dir + "/r.txt", "name = from-file\nkv = int4:b32:int\n");
  const Recipe r = find_recipe(dir + "/r.txt");
  EXPECT_EQ(r.name, "from-file");
  EXPECT_TRUE(r.kv);
  lowp::test::write_text(dir + "/bad.txt", "name = b\nkv = ???\n");
  EXPECT_EQ(error_of([&] { find_recipe(dir + "/bad.txt"); }).find(dir + "/bad.txt: recipe line 2"), 0u);
  std::filesystem::remove_all(dir);
}

}  // namespace
