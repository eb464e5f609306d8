// `lowp golden`: reference vectors for kernel authors, as a safetensors file (docs/golden.md).
// --spec: one tensor quantized (input, codes one per element and packed, block scale codes,
// scales, tensor scale, dequantized values); --recipe: one QuantLinear step of a training
// recipe (X, W, dY -> Y, dX, dW and every GEMM's operands as it read them).
#include <array>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <memory>
#include <numbers>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "cli/command.hpp"
#include "io/safetensors_file.hpp"
#include "lowp/formats/registry.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/numerics/rng.hpp"
#include "lowp/quant/linear.hpp"
#include "lowp/quant/quantize.hpp"
#include "recipe/train_recipe.hpp"

namespace lowp::cli {
namespace {

using accuracy::detail::f32_bytes;
using accuracy::detail::SafetensorsTensor;
using accuracy::detail::u16_bytes;
using accuracy::detail::u32_bytes;

constexpr const char* kLayoutVersion = "1";
constexpr std::size_t kMaxElements = std::size_t{1} << 26;

struct Args {
  std::string spec, recipe, out;
  std::size_t rows = 0, cols = 0;
  std::uint64_t seed = 0;
};

// Standard normal values with varying magnitudes: each run of 16 elements (flat index) is
// scaled by 2^j, j uniform in [-6, 6], one run of 64 in 13 is all zero, and one element in 64
// is a 32x outlier, so block scales differ from block to block and whole blocks are zero.
// `stream` separates X, W and dY.
std::vector<float> golden_input(std::uint64_t seed, std::uint64_t stream, std::size_t rows, std::size_t cols) {
  const RngKey k_normal = rng_key(seed * 16 + stream), k_run = rng_key(seed * 16 + stream + 4),
               k_zero = rng_key(seed * 16 + stream + 8);
  std::vector<float> x(rows * cols);
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (random_bits(k_zero, i / 64) % 13 == 7) continue;  // zero
    const std::uint32_t run = random_bits(k_run, i / 16);
    const double u1 = (static_cast<double>(random_bits(k_normal, 2 * i) >> 8) + 1) * 0x1p-24;  // (0, 1]
    const double u2 = static_cast<double>(random_bits(k_normal, 2 * i + 1) >> 8) * 0x1p-24;     // [0, 1)
    double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
    z = std::ldexp(z, static_cast<int>(run % 13) - 6);
    if ((random_bits(k_run, x.size() + i) & 63) == 0) z *= 32;
    x[i] = static_cast<float>(z);
  }
  return x;
}

SafetensorsTensor f32_tensor(std::string name, std::vector<std::uint64_t> shape, const std::vector<float>& v) {
  return {std::move(name), "F32", std::move(shape), f32_bytes(v)};
}

// Element i's code in lowp's packed storage (lowp/formats/bulk.hpp).
std::uint32_t packed_code(const std::vector<std::uint8_t>& b, int bits, std::size_t i) {
  if (bits <= 4) return (b[i / 2] >> (4 * (i % 2))) & 0xfu;
  if (bits <= 6) {
    const std::size_t g = i / 4 * 3;
    const std::uint32_t w = b[g] | static_cast<std::uint32_t>(b[g + 1]) << 8 | static_cast<std::uint32_t>(b[g + 2]) << 16;
    return (w >> (6 * (i % 4))) & 0x3fu;
  }
  if (bits <= 8) return b[i];
  if (bits <= 16) return static_cast<std::uint32_t>(b[2 * i] | b[2 * i + 1] << 8);
  return static_cast<std::uint32_t>(b[4 * i]) | static_cast<std::uint32_t>(b[4 * i + 1]) << 8 |
         static_cast<std::uint32_t>(b[4 * i + 2]) << 16 | static_cast<std::uint32_t>(b[4 * i + 3]) << 24;
}

// The groups (one scale each) as a rows x cols grid of groups, row-major like the scales.
std::vector<std::uint64_t> group_shape(const quant::QuantSpec& s, std::size_t rows, std::size_t cols) {
  const auto up = [](std::size_t n, std::size_t b) -> std::uint64_t { return (n + b - 1) / b; };
  switch (s.granularity) {
    case quant::Granularity::tensor: return {1, 1};
    case quant::Granularity::row: return {rows, 1};
    case quant::Granularity::column: return {1, cols};
    case quant::Granularity::block: return {rows, up(cols, s.block)};
    case quant::Granularity::tile: return {up(rows, s.block), up(cols, s.block)};
  }
  return {};
}

std::string rule_text(const quant::QuantSpec& s) {
  const std::string d = quant::describe(s);  // format:gran:rule:round:sat
  const std::size_t a = d.find(':'), b = d.find(':', a + 1), c = d.find(':', b + 1);
  return d.substr(b + 1, c - b - 1);
}

std::vector<std::pair<std::string, std::string>> common_metadata(const Args& a, const std::string& mode) {
  const std::string v = version_text();
  const std::string version = v.substr(5, v.find('\n') - 5);  // "lowp X.Y.Z\n..."
  return {{"lowp_golden_layout", kLayoutVersion},
          {"mode", mode},
          {"seed", std::to_string(a.seed)},
          {"lowp_version", version},
          {"rows", std::to_string(a.rows)},
          {"cols", std::to_string(a.cols)}};
}

// The codes and scales of q (a rows x cols tensor), names prefixed with `prefix`.
void add_quantized(std::vector<SafetensorsTensor>& t, const std::string& prefix, const quant::QuantizedTensor& q) {
  const quant::QuantSpec& spec = q.spec;
  const std::size_t R = q.rows, C = q.cols, n = R * C;
  const int bits = spec.format.bits();
  if (bits <= 8) {
    std::vector<std::uint8_t> c(n);
    for (std::size_t i = 0; i < n; ++i) c[i] = static_cast<std::uint8_t>(packed_code(q.codes, bits, i));
    t.push_back({prefix + "codes", "U8", {R, C}, std::move(c)});
  } else if (bits <= 16) {
    std::vector<std::uint16_t> c(n);
    for (std::size_t i = 0; i < n; ++i) c[i] = static_cast<std::uint16_t>(packed_code(q.codes, bits, i));
    t.push_back({prefix + "codes", "U16", {R, C}, u16_bytes(c)});
  } else {
    std::vector<std::uint32_t> c(n);
    for (std::size_t i = 0; i < n; ++i) c[i] = packed_code(q.codes, bits, i);
    t.push_back({prefix + "codes", "U32", {R, C}, u32_bytes(c)});
  }
  t.push_back({prefix + "codes_packed", "U8", {q.codes.size()}, q.codes});
  const std::vector<std::uint64_t> gs = group_shape(spec, R, C);
  const bool scaled = spec.rule != quant::ScaleRule::none;
  if (scaled && q.scales.size() != gs[0] * gs[1])
    throw Error("golden: " + std::to_string(q.scales.size()) + " scales for a group grid of " + std::to_string(gs[0]) +
                "x" + std::to_string(gs[1]));
  if (!q.scale_codes.empty()) t.push_back({prefix + "scale_codes", "U8", gs, q.scale_codes});
  if (scaled) t.push_back(f32_tensor(prefix + "scales", gs, q.scales));
  if (!q.multipliers.empty()) t.push_back(f32_tensor(prefix + "multipliers", gs, q.multipliers));
  if (spec.rule == quant::ScaleRule::nvfp4 || spec.rule == quant::ScaleRule::nvfp4_4over6) t.push_back(f32_tensor(prefix + "tensor_scale", {}, {q.tensor_scale}));
}

std::vector<SafetensorsTensor> spec_tensors(const Args& a, const quant::QuantSpec& spec,
                                            std::vector<std::pair<std::string, std::string>>& meta) {
  const std::size_t R = a.rows, C = a.cols;
  const std::vector<float> x = golden_input(a.seed, 0, R, C);
  const quant::QuantizedTensor q = quant::quantize(spec, x.data(), R, C);
  std::vector<float> deq(R * C);
  quant::dequantize(q, deq.data());

  std::vector<SafetensorsTensor> t;
  t.push_back(f32_tensor("input", {R, C}, x));
  add_quantized(t, "", q);
  t.push_back(f32_tensor("dequantized", {R, C}, deq));

  const std::vector<std::uint64_t> gs = group_shape(spec, R, C);
  meta.emplace_back("spec", a.spec);
  meta.emplace_back("spec_canonical", quant::describe(spec));
  meta.emplace_back("element_format", format_name(spec.format));
  meta.emplace_back("element_bits", std::to_string(spec.format.bits()));
  meta.emplace_back("scale_rule", rule_text(spec));
  meta.emplace_back("group_rows", std::to_string(gs[0]));
  meta.emplace_back("group_cols", std::to_string(gs[1]));
  meta.emplace_back("block", std::to_string(spec.block));
  return t;
}

std::vector<float> transposed(const std::vector<float>& m, std::size_t rows, std::size_t cols) {
  std::vector<float> t(m.size());
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) t[c * rows + r] = m[r * cols + c];
  return t;
}

// Why an operand's codes cannot be had by quantizing its float source with its spec ("" if
// they can): the GEMM transforms the source first, or draws random bits of its own.
std::string codes_unavailable(const quant::LinearRecipe& r, const quant::GemmRecipe& g, int side, int gemm) {
  const std::optional<quant::QuantSpec>& spec = side == 0 ? g.a : g.b;
  if (!spec) return "float32 operand";
  if (r.engine == quant::LinearEngine::switchback_int8 && gemm < 2) return "int8 GEMM";
  if (g.rotation != hadamard::RotationKind::none || g.signs != quant::BlockSigns::none) return "rotated first";
  if ((side == 0 ? g.a_special : g.b_special) != quant::SpecialQuant::none) return "special quantizer";
  if (g.delayed) return "delayed scaling";
  if (spec->cast.round == Round::stochastic) return "stochastic rounding";
  if (gemm == 2 && side == 1 && r.wgrad_uses_quantized_x) return "quantized from the forward's X";
  return "";
}

std::vector<SafetensorsTensor> recipe_tensors(const Args& a, std::vector<std::pair<std::string, std::string>>& meta) {
  train::TrainRecipe tr;
  try {
    tr = train::find_train_recipe(a.recipe);
  } catch (const Error& e) {
    throw Failure{exit_usage, e.what()};
  }
  if (tr.scalify)
    throw Failure{exit_usage, "recipe '" + tr.name + "' trains on scaled tensors, not QuantLinear layers; it has no linear step"};
  // M tokens x K features in, N = K features out: X M x K, W N x K, dY M x N.
  const std::size_t M = a.rows, K = a.cols, N = a.cols;
  quant::QuantLinear lin(tr.linear, K, N, false);
  const std::vector<float> X = golden_input(a.seed, 1, M, K);
  std::vector<float> W = golden_input(a.seed, 2, N, K);
  for (float& w : W) w *= 0.125f;  // a weight-like scale; still varying by block
  const std::vector<float> dY = golden_input(a.seed, 3, M, N);
  lin.weight() = W;
  lin.capture_operands(true);
  std::vector<float> Y(M * N), dX(M * K);
  std::array<std::vector<float>, 6> ops, back;
  try {  // what fails here is a shape one of the GEMMs' blocks does not divide
    lin.forward(X.data(), M, Y.data(), a.seed);
    ops = lin.take_operands();
    lin.backward(dY.data(), dX.data(), a.seed);
    back = lin.take_operands();
  } catch (const Error& e) {
    throw Failure{exit_usage, e.what()};
  }
  for (int i = 2; i < 6; ++i) ops[static_cast<std::size_t>(i)] = back[static_cast<std::size_t>(i)];

  std::vector<SafetensorsTensor> t;
  t.push_back(f32_tensor("X", {M, K}, X));
  t.push_back(f32_tensor("W", {N, K}, W));
  t.push_back(f32_tensor("dY", {M, N}, dY));
  t.push_back(f32_tensor("Y", {M, N}, Y));
  t.push_back(f32_tensor("dX", {M, K}, dX));
  t.push_back(f32_tensor("dW", {N, K}, lin.weight_grad()));
  // GEMM operands, reduction dimension last: fwd X (M x K), W (N x K); dgrad dY (M x N),
  // W^T (K x N); wgrad dY^T (N x M), X^T (K x M).
  const char* names[6] = {"fwd.X", "fwd.W", "dgrad.dY", "dgrad.Wt", "wgrad.dYt", "wgrad.Xt"};
  const std::uint64_t shapes[6][2] = {{M, K}, {N, K}, {M, N}, {K, N}, {N, M}, {K, M}};
  const quant::GemmDescription gd = quant::describe_gemms(tr.linear);
  // Each operand's float source, in its GEMM's orientation.
  const std::vector<float> sources[6] = {X, W, dY, transposed(W, N, K), transposed(dY, M, N), transposed(X, M, K)};
  const quant::GemmRecipe* gemms[3] = {&tr.linear.fwd, &tr.linear.dgrad, &tr.linear.wgrad};
  for (std::size_t i = 0; i < 6; ++i) {
    if (ops[i].empty()) {  // the int8 engine's GEMMs are not captured
      meta.emplace_back(std::string(names[i]) + ".codes", "absent: int8 GEMM, not captured");
      continue;
    }
    const std::size_t rows = shapes[i][0], cols = shapes[i][1];
    t.push_back(f32_tensor(names[i], {rows, cols}, ops[i]));
    const quant::GemmRecipe& g = *gemms[i / 2];
    std::string why = codes_unavailable(tr.linear, g, static_cast<int>(i % 2), static_cast<int>(i / 2));
    if (why.empty()) {
      // Stored only when they reproduce the operand the GEMM read, bit for bit.
      const quant::QuantizedTensor q = quant::quantize(*(i % 2 ? g.b : g.a), sources[i].data(), rows, cols);
      std::vector<float> deq(rows * cols);
      quant::dequantize(q, deq.data());
      if (std::memcmp(deq.data(), ops[i].data(), deq.size() * sizeof(float)) == 0)
        add_quantized(t, std::string(names[i]) + ".", q);
      else
        why = "the spec on the float source does not give the GEMM's operand";
    }
    meta.emplace_back(std::string(names[i]) + ".codes", why.empty() ? "stored" : "absent: " + why);
  }
  meta.emplace_back("recipe", tr.name);
  meta.emplace_back("linear", quant::describe(tr.linear));
  meta.emplace_back("fwd", gd.fwd);
  meta.emplace_back("dgrad", gd.dgrad);
  meta.emplace_back("wgrad", gd.wgrad);
  meta.emplace_back("M", std::to_string(M));
  meta.emplace_back("K", std::to_string(K));
  meta.emplace_back("N", std::to_string(N));
  return t;
}

int run_golden(Io& io, const Args& a) {
  if (a.spec.empty() == a.recipe.empty()) throw Failure{exit_usage, "give exactly one of --spec and --recipe"};
  if (a.rows > kMaxElements / a.cols)
    throw Failure{exit_usage, "--rows x --cols = " + std::to_string(a.rows) + " x " + std::to_string(a.cols) +
                                  " is more than " + std::to_string(kMaxElements) + " elements"};
  std::vector<std::pair<std::string, std::string>> meta = common_metadata(a, a.spec.empty() ? "recipe" : "spec");
  std::vector<SafetensorsTensor> t;
  if (!a.spec.empty()) {
    quant::QuantSpec spec;
    try {
      spec = quant::parse_quant_spec(a.spec);
      quant::check_shape(spec, a.rows, a.cols);
    } catch (const Error& e) {
      throw Failure{exit_usage, e.what()};
    }
    t = spec_tensors(a, spec, meta);
  } else {
    t = recipe_tensors(a, meta);
  }
  accuracy::detail::write_safetensors(a.out, t, meta);
  io.out << "wrote " << a.out << " (" << t.size() << " tensors)\n";
  return exit_ok;
}

}  // namespace

Command add_golden_command(CLI::App& parent) {
  auto a = std::make_shared<Args>();
  CLI::App* app = parent.add_subcommand(
      "golden", "Write reference vectors (a quantized tensor, or one training-recipe linear step) as safetensors");
  auto* spec = app->add_option("--spec", a->spec, "Quantization spec, e.g. nvfp4, mxfp4, e4m3:row, e2m1:b32:even");
  auto* recipe = app->add_option("--recipe", a->recipe, "Training recipe (lowp recipes): one QuantLinear step");
  spec->excludes(recipe);
  add_number_option<std::size_t>(app, "--rows", a->rows, 1, kMaxElements, "Rows (tokens M for --recipe)")->required();
  add_number_option<std::size_t>(app, "--cols", a->cols, 1, kMaxElements,
                                 "Columns (features K = N for --recipe; a multiple of the block)")
      ->required();
  add_number_option<std::uint64_t>(app, "--seed", a->seed, 0, UINT64_MAX, "Seed of the inputs and of the step (default 0)");
  app->add_option("--out", a->out, "Output file (.safetensors), written atomically")->required();
  app->footer("Layout (tensor names, dtypes, packing, metadata): docs/golden.md.");
  return {app, [a](Io& io) { return run_golden(io, *a); }};
}

}  // namespace lowp::cli
