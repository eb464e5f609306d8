// The sweep writers: CSV, JSON and SVG read back with independent parsers (Boost.PropertyTree's
// JSON and XML readers), escaping of hostile names, non-finite numbers, and the tables.
#include <gtest/gtest.h>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "lowp/accuracy/report.hpp"

namespace {

using namespace lowp::accuracy;
namespace pt = boost::property_tree;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> r;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) r.push_back(l);
  return r;
}

pt::ptree parse_json(const std::string& s) {
  std::istringstream in(s);
  pt::ptree t;
  pt::read_json(in, t);  // throws on malformed JSON
  return t;
}

// A number read as text (ptree's own numeric translator draws -Wmaybe-uninitialized in GCC 12).
double num(const pt::ptree& t, const std::string& path) { return std::stod(t.get<std::string>(path)); }

pt::ptree parse_xml(const std::string& s) {
  std::istringstream in(s);
  pt::ptree t;
  pt::read_xml(in, t);  // throws on malformed XML
  return t;
}

// Every <text> content in the SVG, in document order (nested titles excluded).
void collect_text(const pt::ptree& t, std::vector<std::string>& out) {
  for (const auto& [key, child] : t) {
    if (key == "text") out.push_back(child.get_value<std::string>());
    collect_text(child, out);
  }
}

std::size_t count_key(const pt::ptree& t, const std::string& key) {
  std::size_t n = 0;
  for (const auto& [k, child] : t) n += (k == key) + count_key(child, key);
  return n;
}

std::vector<TensorSweepRow> tensor_rows() {
  std::vector<TensorSweepRow> rows;
  for (const char* d : {"gaussian", "llm_activations"})
    for (const char* spec : {"e4m3:row", "mxfp4"})
      for (const char* rot : {"none", "hadamard"}) {
        TensorSweepRow r;
        r.distribution = d;
        r.spec = spec;
        r.format = std::string(spec) == "mxfp4" ? "float4_e2m1fn" : "float8_e4m3fn";
        r.granularity = std::string(spec) == "mxfp4" ? "b32" : "row";
        r.scale = std::string(spec) == "mxfp4" ? "mx" : "amax";
        r.rotation = rot;
        r.bits_per_element = std::string(spec) == "mxfp4" ? 4.25 : 8.0078125;
        r.sqnr_db = 10.0 + static_cast<double>(rows.size()) + 0.1;
        r.mse = 1.0 / (3.0 + static_cast<double>(rows.size()));
        r.max_abs_error = 0.5;
        rows.push_back(r);
      }
  rows[1].sqnr_db = kInf;  // an exact pass
  rows[2].mse = kNaN;
  rows[2].nonfinite = 5;
  return rows;
}

TensorSweepOptions tensor_opt() {
  TensorSweepOptions o;
  o.rows = 16;
  o.cols = 64;
  o.seed = 9;
  return o;
}

TEST(SweepReport, TensorCsvIsExactAndComplete) {
  const auto rows = tensor_rows();
  std::ostringstream out;
  write_tensor_sweep_csv(out, rows);
  const auto l = lines(out.str());
  ASSERT_EQ(l.size(), rows.size() + 1);
  EXPECT_EQ(l[0], "distribution,spec,format,granularity,scale,rotation,bits_per_element,sqnr_db,mse,max_abs_error,nonfinite");
  EXPECT_EQ(l[1], "gaussian,e4m3:row,float8_e4m3fn,row,amax,none,8.0078125,10.1,0.3333333333333333,0.5,0");
  EXPECT_TRUE(l[2].starts_with("gaussian,e4m3:row,float8_e4m3fn,row,amax,hadamard,8.0078125,inf,")) << l[2];
  EXPECT_NE(l[3].find(",nan,0.5,5"), std::string::npos);
  // Every number reads back as exactly the double written.
  const std::string mse = l[4].substr(0, l[4].rfind(",0.5,"));
  EXPECT_EQ(std::stod(mse.substr(mse.rfind(',') + 1)), rows[3].mse);
}

TEST(SweepReport, TensorJsonParsesWithNullForNonFinite) {
  const auto rows = tensor_rows();
  std::ostringstream out;
  write_tensor_sweep_json(out, rows, tensor_opt());
  const pt::ptree t = parse_json(out.str());
  EXPECT_EQ(num(t, "rows"), 16);
  EXPECT_EQ(num(t, "cols"), 64);
  EXPECT_EQ(num(t, "seed"), 9);
  const auto& res = t.get_child("results");
  ASSERT_EQ(res.size(), rows.size());
  auto it = res.begin();
  EXPECT_EQ(it->second.get<std::string>("spec"), "e4m3:row");
  EXPECT_EQ(num(it->second, "sqnr_db"), 10.1);
  EXPECT_EQ(num(it->second, "bits_per_element"), 8.0078125);
  ++it;
  EXPECT_EQ(it->second.get<std::string>("sqnr_db"), "null");
  ++it;
  EXPECT_EQ(it->second.get<std::string>("mse"), "null");
  EXPECT_EQ(num(it->second, "nonfinite"), 5);
  EXPECT_NE(out.str().find("\"sqnr_db\": null"), std::string::npos);  // a JSON null, not a string
}

TEST(SweepReport, TensorSvgIsWellFormedWithABarPerPass) {
  const auto rows = tensor_rows();
  std::ostringstream out;
  write_tensor_sweep_svg(out, rows, tensor_opt());
  const pt::ptree t = parse_xml(out.str());
  const auto& svg = t.get_child("svg");
  EXPECT_EQ(svg.get<std::string>("<xmlattr>.xmlns"), "http://www.w3.org/2000/svg");
  // Background + a legend swatch per rotation + a bar per pass.
  EXPECT_EQ(count_key(svg, "rect"), 1 + 2 + rows.size());
  std::vector<std::string> texts;
  collect_text(svg, texts);
  for (const char* want : {"gaussian", "llm_activations", "e4m3:row", "mxfp4", "rotation none", "rotation hadamard"})
    EXPECT_NE(std::find(texts.begin(), texts.end(), want), texts.end()) << want;
}

TEST(SweepReport, TensorTableHasAPanelPerDistributionAndAColumnPerRotation) {
  const auto rows = tensor_rows();
  std::ostringstream out;
  write_tensor_sweep_table(out, rows, tensor_opt());
  const std::string s = out.str();
  EXPECT_NE(s.find("16 x 64 values per distribution, seed 9"), std::string::npos);
  EXPECT_NE(s.find("\ngaussian\n"), std::string::npos);
  EXPECT_NE(s.find("\nllm_activations\n"), std::string::npos);
  EXPECT_NE(s.find("dB none  dB had"), std::string::npos) << s;
  EXPECT_NE(s.find("nonfinite"), std::string::npos);  // some pass has one
  // e4m3:row on gaussian: bits, then SQNR none = 10.10 and hadamard = inf.
  bool found = false;
  for (const auto& l : lines(s))
    if (l.starts_with("e4m3:row ") && !found) {
      found = true;
      std::istringstream f(l);
      std::string spec, bits, db_none, db_had;
      f >> spec >> bits >> db_none >> db_had;
      EXPECT_EQ(bits, "8.008");
      EXPECT_EQ(db_none, "10.10");
      EXPECT_EQ(db_had, "inf");
    }
  EXPECT_TRUE(found);
}

// A hand-made model sweep: a hostile recipe name, a NaN result, a failure.
ModelSweep model_sweep() {
  ModelSweep s;
  s.model = "models/<tiny> & \"small\".bin";
  s.tokens = 512;
  s.scored = 255;
  s.ctx = 256;
  s.ref_ppl = 12.5;
  s.ref_ppl_se = 0.75;
  s.ref_seconds = 0.5;
  RecipeResult a;
  a.recipe = "bf16";
  a.note = "bfloat16 everywhere";
  a.cmp.tokens = 255;
  a.cmp.ppl = 12.625;
  a.cmp.ppl_se = 0.8;
  a.cmp.ln_ppl_ratio = 0.01;
  a.cmp.kld_mean = 0.0025;
  a.cmp.kld_se = 0.0001;
  a.cmp.kld_median = 0.002;
  a.cmp.kld_p99 = 0.01;
  a.cmp.kld_max = 0.03;
  a.cmp.dp_mean = -0.001;
  a.cmp.dp_rms = 0.01;
  a.cmp.same_top1 = 97.5;
  a.seconds = 0.25;
  TensorError e;
  e.point = "x.wq";
  e.layer = 0;
  e.signal = 100;
  e.noise = 1;
  e.count = 64;
  a.tensor_errors = {e};
  RecipeResult b = a;
  b.recipe = "a,\"b\"<c>&d";
  b.note = "quoted\nnote";
  b.cmp.kld_mean = kNaN;
  b.cmp.ppl = kNaN;
  b.cmp.nonfinite = 255;
  b.tensor_errors.clear();
  RecipeResult c;
  c.recipe = "broken";
  c.error = "recipe 'broken': block 128 > 64";
  s.results = {a, b, c};
  return s;
}

TEST(SweepReport, ModelCsvColumnsAreTheContract) {
  std::ostringstream out;
  write_model_sweep_csv(out, model_sweep());
  const auto l = lines(out.str());
  ASSERT_EQ(l.size(), 4u);
  EXPECT_EQ(l[0],
            "recipe,ppl,ppl_se,ln_ppl_ratio,ln_ppl_ratio_se,kld_mean,kld_se,kld_median,kld_p99,kld_max,dp_mean,dp_rms,"
            "same_top1_pct,tokens,nonfinite,seconds,error");
  EXPECT_EQ(l[1], "bf16,12.625,0.8,0.01,0,0.0025,1e-04,0.002,0.01,0.03,-0.001,0.01,97.5,255,0,0.25,");
  EXPECT_TRUE(l[2].starts_with("\"a,\"\"b\"\"<c>&d\",nan,0.8,")) << l[2];
  EXPECT_NE(l[2].find(",255,255,0.25,"), std::string::npos) << l[2];
  EXPECT_EQ(l[3], "broken,,,,,,,,,,,,,0,0,0,recipe 'broken': block 128 > 64");
}

TEST(SweepReport, ModelJsonParsesAndCarriesTheLayers) {
  std::ostringstream out;
  write_model_sweep_json(out, model_sweep());
  const pt::ptree t = parse_json(out.str());
  EXPECT_EQ(t.get<std::string>("model"), "models/<tiny> & \"small\".bin");
  EXPECT_EQ(num(t, "scored"), 255);
  EXPECT_EQ(num(t, "reference.ppl"), 12.5);
  const auto& rec = t.get_child("recipes");
  ASSERT_EQ(rec.size(), 3u);
  auto it = rec.begin();
  EXPECT_EQ(it->second.get<std::string>("recipe"), "bf16");
  EXPECT_EQ(num(it->second, "kld_mean"), 0.0025);
  EXPECT_EQ(num(it->second, "same_top1_pct"), 97.5);
  const auto& layers = it->second.get_child("layers");
  ASSERT_EQ(layers.size(), 1u);
  EXPECT_EQ(layers.begin()->second.get<std::string>("point"), "x.wq");
  EXPECT_NEAR(num(layers.begin()->second, "sqnr_db"), 20.0, 1e-12);  // 10 log10(100 / 1)
  ++it;
  EXPECT_EQ(it->second.get<std::string>("recipe"), "a,\"b\"<c>&d");
  EXPECT_EQ(it->second.get<std::string>("note"), "quoted\nnote");
  EXPECT_EQ(it->second.get<std::string>("kld_mean"), "null");
  ++it;
  EXPECT_EQ(it->second.get<std::string>("error"), "recipe 'broken': block 128 > 64");
  EXPECT_EQ(it->second.get<std::string>("ppl"), "null");
}

TEST(SweepReport, ModelSvgIsWellFormedAndEscaped) {
  std::ostringstream out;
  write_model_sweep_svg(out, model_sweep());
  const std::string s = out.str();
  EXPECT_EQ(s.find("<c>"), std::string::npos);  // escaped
  const pt::ptree t = parse_xml(s);
  std::vector<std::string> texts;
  collect_text(t.get_child("svg"), texts);
  for (const char* want : {"a,\"b\"<c>&d", "bf16", "broken", "0.0025", "no finite positions, 255 nonfinite"})
    EXPECT_NE(std::find(texts.begin(), texts.end(), want), texts.end()) << want;
  EXPECT_TRUE(std::any_of(texts.begin(), texts.end(), [](const std::string& x) { return x.starts_with("failed: "); }));
}

TEST(SweepReport, ModelTableListsFailuresAndLayers) {
  std::ostringstream out;
  const ModelSweep s = model_sweep();
  write_model_sweep_table(out, s);
  write_model_sweep_layers(out, s);
  const std::string text = out.str();
  EXPECT_NE(text.find("fp32 reference: PPL 12.5000 +- 0.7500"), std::string::npos) << text;
  EXPECT_NE(text.find("failed: broken: recipe 'broken': block 128 > 64"), std::string::npos);
  const auto l = lines(text);
  const auto row = std::find_if(l.begin(), l.end(), [](const std::string& x) { return x.starts_with("bf16 "); });
  ASSERT_NE(row, l.end());
  EXPECT_NE(row->find("2.500e-03"), std::string::npos) << *row;
  EXPECT_NE(row->find("97.50"), std::string::npos) << *row;
  const auto layer = std::find_if(l.begin(), l.end(), [](const std::string& x) { return x.find("x.wq") != std::string::npos; });
  ASSERT_NE(layer, l.end());
  EXPECT_NE(layer->find("20.00"), std::string::npos) << *layer;
}

}  // namespace
