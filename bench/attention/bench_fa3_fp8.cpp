// FlashAttention-3's FP8 numerical-error experiment (Shah et al. 2024, §4.3), with lowp's
// attention quantization points.
//
// Q, K, V (4 heads x N tokens x d = 128) have entries N(0, 1) + Bernoulli(0.001) * N(0, 10^2): a
// standard normal plus, for 0.1% of entries, an outlier of standard deviation 10. The oracle
// is softmax(Q K^T / sqrt(d)) V in float64 (non-causal); each quantized path reports
// rmse = sqrt(mean((O - O_fp64)^2)) over all outputs as a counter (the mean over kDraws
// independent draws, with their range), and its CPU time.
//
// The quantized paths use the specs of lowp's built-in recipes (`fp8-attn`: attn.qk and
// attn.v = e4m3:tensor:amax, attn.p = e4m3:tensor:none) through quant::fake_quant, the
// hadamard library's rotations, and gemm_f32 (float32 accumulation; Hopper's FP8 tensor cores
// keep fewer accumulator bits, not emulated here):
//   BM_fa3_fp32                      no quantization (the float32 floor)
//   BM_fa3_fp8_per_tensor            the paper's baseline: Q, K, V per-tensor E4M3, P in FP16
//   BM_fa3_fp8_per_tensor_p_e4m3     the same with the normalized P cast to E4M3 unscaled (an FP8
//                                    P V GEMM takes P in FP8), as `fp8-attn` did before p_form
//   BM_fa3_fp8_per_tensor_p_e4m3_amax  ... and with P given its own per-tensor amax scale
//   BM_fa3_fp8_block_hadamard        FA3: Q, K randomized-Hadamard rotated over d (random signs,
//                                    then H), one E4M3 scale per 128-token block of each head
//                                    for Q, K, V, and the unnormalized P~ = exp(S - rowmax) cast
//                                    to E4M3 unscaled; O = (P~ V) / rowsum(P~), the sum in float32
//   BM_fa3_fp8_block_hadamard_p256   the same with P~ scaled by 2^8 before the cast, as
//                                    FA3's released kernel does (Softmax<..., Max_offset = 8>)
//   BM_fa3_fp8_block                 FA3 without the rotation (ablation)
//   BM_fa3_fp8_per_tensor_hadamard   the same with per-tensor scales (ablation)
//   BM_fa3_fp8_per_tensor_hadamard_p_normalized  and with the normalized P cast to E4M3 instead
//   BM_fa3_recipe_fp8_attn[_hadamard|_fa3]  lowp's recipes as `lowp eval` applies them: per-tensor
//                                    Q, K, V, P as FA3's kernel casts it (attn.p_form = fa3), no /
//                                    plain / random-sign Hadamard
// BM_fa3_fp64_reference times the oracle. Shapes: 4 heads x N tokens x head_dim 128, N the
// benchmark's argument (1024 and 4096; the oracle is timed at 1024), one thread.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <numbers>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "lowp/accuracy/recipe.hpp"
#include "lowp/hadamard/rotation.hpp"
#include "lowp/quant/gemm.hpp"
#include "lowp/quant/quantize.hpp"

namespace {

using lowp::hadamard::Rotation;
using lowp::hadamard::RotationKind;
using lowp::quant::QuantSpec;

constexpr std::size_t kHeads = 4, kD = 128;
constexpr std::size_t kBlock = 128;  // tokens per scale block: one attention tile's height
constexpr std::uint64_t kSeed = 20240711;

struct Inputs {
  std::size_t n = 0;           // tokens
  std::vector<float> q, k, v;  // [head][token][d]
};

// N(0,1) + Bernoulli(p) N(0, sigma^2) from mt19937_64 through Box-Muller (both fully specified,
// so the draw is the same with any standard library).
std::vector<float> outlier_normals(std::size_t n, std::mt19937_64& gen) {
  auto uniform = [&] { return (static_cast<double>(gen() >> 11) + 0.5) * 0x1p-53; };  // (0, 1)
  auto normal = [&] {
    return std::sqrt(-2.0 * std::log(uniform())) * std::cos(2.0 * std::numbers::pi * uniform());
  };
  std::vector<float> x(n);
  for (float& e : x) {
    double v = normal();
    if (uniform() < 0.001) v += 10.0 * normal();
    e = static_cast<float>(v);
  }
  return x;
}

// Draw `draw` of the inputs at n tokens (draw 0 is the one timed).
const Inputs& inputs(std::size_t n, unsigned draw = 0) {
  static std::map<std::pair<std::size_t, unsigned>, Inputs> cache;
  auto it = cache.find({n, draw});
  if (it == cache.end()) {
    std::mt19937_64 gen(kSeed + 1000003 * draw + n);
    Inputs r;
    r.n = n;
    r.q = outlier_normals(kHeads * n * kD, gen);
    r.k = outlier_normals(kHeads * n * kD, gen);
    r.v = outlier_normals(kHeads * n * kD, gen);
    it = cache.emplace(std::pair{n, draw}, std::move(r)).first;
  }
  return it->second;
}

// The oracle: float64 throughout, from the float32 inputs.
std::vector<double> attention_fp64(const Inputs& in) {
  const std::size_t n = in.n;
  std::vector<double> out(kHeads * n * kD, 0.0), s(n);
  const double scale = 1.0 / std::sqrt(static_cast<double>(kD));
  for (std::size_t h = 0; h < kHeads; ++h) {
    const float* q = in.q.data() + h * n * kD;
    const float* k = in.k.data() + h * n * kD;
    const float* v = in.v.data() + h * n * kD;
    for (std::size_t i = 0; i < n; ++i) {
      double mx = -INFINITY;
      for (std::size_t j = 0; j < n; ++j) {
        double dot = 0;
        for (std::size_t c = 0; c < kD; ++c) dot += static_cast<double>(q[i * kD + c]) * k[j * kD + c];
        s[j] = dot * scale;
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (std::size_t j = 0; j < n; ++j) sum += s[j] = std::exp(s[j] - mx);
      double* o = out.data() + (h * n + i) * kD;
      for (std::size_t j = 0; j < n; ++j) {
        const double p = s[j] / sum;
        for (std::size_t c = 0; c < kD; ++c) o[c] += p * v[j * kD + c];
      }
    }
  }
  return out;
}

const std::vector<double>& reference(std::size_t n, unsigned draw) {
  static std::map<std::pair<std::size_t, unsigned>, std::vector<double>> cache;
  auto it = cache.find({n, draw});
  if (it == cache.end()) it = cache.emplace(std::pair{n, draw}, attention_fp64(inputs(n, draw))).first;
  return it->second;
}

// One quantized attention. Q, K, V scales: per tensor (all heads), or per block of kBlock
// tokens x d of one head (a row of the [head * N / kBlock] x [kBlock * d] view).
struct Path {
  std::optional<QuantSpec> qk, v, p;  // as in lowp::accuracy::Recipe
  bool block_scales = false;
  Rotation rotation;                  // on Q and K over d
  bool unnormalized_p = false;        // FA3: quantize exp(S - rowmax), divide by the row sum after PV
  float p_scale = 1.0f;               // a power of two times exp(S - rowmax) (FA3's code: 2^8)
};

void fake_quant_qkv(const QuantSpec& spec, bool blocks, std::size_t n, std::vector<float>& x) {
  QuantSpec s = spec;
  std::size_t rows = kHeads * n, cols = kD;
  if (blocks) {
    s.granularity = lowp::quant::Granularity::row;
    rows = kHeads * n / kBlock;
    cols = kBlock * kD;
  }
  lowp::quant::fake_quant(s, x.data(), rows, cols);
}

std::vector<float> attention(const Inputs& in, const Path& path) {
  const std::size_t n = in.n;
  std::vector<float> q = in.q, k = in.k, v = in.v;
  if (path.rotation.kind != RotationKind::none) {  // (Q R)(K R)^T = Q K^T
    path.rotation.apply(q.data(), kHeads * n, kD);
    path.rotation.apply(k.data(), kHeads * n, kD);
  }
  if (path.qk) {
    fake_quant_qkv(*path.qk, path.block_scales, n, q);
    fake_quant_qkv(*path.qk, path.block_scales, n, k);
  }
  if (path.v) fake_quant_qkv(*path.v, path.block_scales, n, v);
  std::vector<float> out(kHeads * n * kD), s(n * n), vt(kD * n), o(n * kD), sums(n);
  const float scale = 1.0f / std::sqrt(static_cast<float>(kD));
  for (std::size_t h = 0; h < kHeads; ++h) {
    const float* qh = q.data() + h * n * kD;
    const float* kh = k.data() + h * n * kD;
    const float* vh = v.data() + h * n * kD;
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t c = 0; c < kD; ++c) vt[c * n + j] = vh[j * kD + c];
    lowp::quant::gemm_f32(qh, kh, s.data(), n, n, kD, false, 1);
    for (std::size_t i = 0; i < n; ++i) {
      float* row = s.data() + i * n;
      float mx = -INFINITY;
      for (std::size_t j = 0; j < n; ++j) mx = std::max(mx, row[j] *= scale);
      float sum = 0;
      for (std::size_t j = 0; j < n; ++j) sum += row[j] = std::exp(row[j] - mx) * path.p_scale;
      sums[i] = sum;
      if (!path.unnormalized_p)
        for (std::size_t j = 0; j < n; ++j) row[j] /= sum;
    }
    if (path.p) lowp::quant::fake_quant(*path.p, s.data(), n, n);
    lowp::quant::gemm_f32(s.data(), vt.data(), o.data(), n, kD, n, false, 1);
    float* oh = out.data() + h * n * kD;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t c = 0; c < kD; ++c)
        oh[i * kD + c] = path.unnormalized_p ? o[i * kD + c] / sums[i] : o[i * kD + c];
  }
  return out;
}

double rmse(const std::vector<float>& o, const std::vector<double>& ref) {
  double ss = 0;
  for (std::size_t i = 0; i < o.size(); ++i) ss += (o[i] - ref[i]) * (o[i] - ref[i]);
  return std::sqrt(ss / static_cast<double>(o.size()));
}

double rms(const std::vector<double>& ref) {
  double ss = 0;
  for (double x : ref) ss += x * x;
  return std::sqrt(ss / static_cast<double>(ref.size()));
}

const lowp::accuracy::Recipe& fp8_attn() {
  static const lowp::accuracy::Recipe r = lowp::accuracy::find_recipe("fp8-attn");
  return r;
}

Rotation head_rotation(RotationKind kind) { return {kind, kD, 0, kind == RotationKind::randomized ? kSeed : 0}; }

Path fa3(bool blocks, bool rotate) {
  const auto& r = fp8_attn();
  Path p{r.q, r.v, r.p, blocks, {}, true};
  if (rotate) p.rotation = head_rotation(RotationKind::randomized);
  return p;
}

// The outliers make one draw's RMSE vary by tens of percent, so the counters are over kDraws
// independent draws of Q, K, V (and of the random signs): rmse is their mean, rmse_min and
// rmse_max the range, rms_out the mean RMS of the exact output. Computed once per benchmark
// and size, outside the timed loop (which runs draw 0).
constexpr unsigned kDraws = 5;

struct Errors {
  double mean = 0, min = INFINITY, max = 0, rms_out = 0;
};

void run(benchmark::State& state, const char* name, const Path& path) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const auto n = static_cast<std::size_t>(state.range(0));
  const Inputs& in = inputs(n);
  std::vector<float> out;
  for (auto _ : state) {
    out = attention(in, path);
    benchmark::DoNotOptimize(out.data());
  }
  static std::map<std::pair<std::string, std::size_t>, Errors> cache;
  auto it = cache.find({name, n});
  if (it == cache.end()) {
    Errors e;
    for (unsigned d = 0; d < kDraws; ++d) {
      Path p = path;
      if (p.rotation.kind == RotationKind::randomized) p.rotation.seed = kSeed + d;
      const double r = rmse(attention(inputs(n, d), p), reference(n, d));
      e.mean += r / kDraws;
      e.min = std::min(e.min, r);
      e.max = std::max(e.max, r);
      e.rms_out += rms(reference(n, d)) / kDraws;
    }
    it = cache.emplace(std::pair{std::string(name), n}, e).first;
  }
  state.counters["rmse"] = it->second.mean;
  state.counters["rmse_min"] = it->second.min;
  state.counters["rmse_max"] = it->second.max;
  state.counters["rms_out"] = it->second.rms_out;
  omp_set_num_threads(saved);
}

void BM_fa3_fp64_reference(benchmark::State& state) {
  const Inputs& in = inputs(static_cast<std::size_t>(state.range(0)));
  std::vector<double> out;
  for (auto _ : state) {
    out = attention_fp64(in);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["rms_out"] = rms(out);
}

void BM_fa3_fp32(benchmark::State& s) { run(s, "fp32", Path{}); }

// The per-tensor baseline with P cast to p_spec: FP16 (the paper's text), or, since an FP8 P V
// GEMM takes P in FP8, the normalized P (entries ~1/N) in E4M3 unscaled or scaled by its amax.
void per_tensor(benchmark::State& s, const char* name, const char* p_spec) {
  const auto& r = fp8_attn();
  run(s, name, Path{r.q, r.v, lowp::quant::parse_quant_spec(p_spec), false, {}, false});
}
void BM_fa3_fp8_per_tensor(benchmark::State& s) { per_tensor(s, "per_tensor", "fp16"); }
void BM_fa3_fp8_per_tensor_p_e4m3(benchmark::State& s) { per_tensor(s, "per_tensor_p_e4m3", "e4m3:tensor:none"); }
void BM_fa3_fp8_per_tensor_p_e4m3_amax(benchmark::State& s) { per_tensor(s, "per_tensor_p_e4m3_amax", "e4m3:tensor:amax"); }
void BM_fa3_fp8_block_hadamard(benchmark::State& s) { run(s, "block_hadamard", fa3(true, true)); }
void BM_fa3_fp8_block_hadamard_p256(benchmark::State& s) {
  Path p = fa3(true, true);
  p.p_scale = 256.0f;
  run(s, "block_hadamard_p256", p);
}
void BM_fa3_fp8_block(benchmark::State& s) { run(s, "block", fa3(true, false)); }
void BM_fa3_fp8_per_tensor_hadamard(benchmark::State& s) { run(s, "per_tensor_hadamard", fa3(false, true)); }
void BM_fa3_fp8_per_tensor_hadamard_p_normalized(benchmark::State& s) {
  Path p = fa3(false, true);
  p.unnormalized_p = false;
  run(s, "per_tensor_hadamard_p_normalized", p);
}

void recipe(benchmark::State& s, const char* name) {
  const lowp::accuracy::Recipe r = lowp::accuracy::find_recipe(name);
  using lowp::accuracy::AttnRotation;
  const bool fa3_p = r.p_form == lowp::accuracy::AttnPForm::fa3;
  Path p{r.q, r.v, r.p, false, {}, fa3_p, fa3_p ? 256.0f : 1.0f};
  if (r.attn_rotate != AttnRotation::none)
    p.rotation = head_rotation(r.attn_rotate == AttnRotation::hadamard ? RotationKind::hadamard : RotationKind::randomized);
  run(s, name, p);
}
void BM_fa3_recipe_fp8_attn(benchmark::State& s) { recipe(s, "fp8-attn"); }
void BM_fa3_recipe_fp8_attn_hadamard(benchmark::State& s) { recipe(s, "fp8-attn-hadamard"); }
void BM_fa3_recipe_fp8_attn_fa3(benchmark::State& s) { recipe(s, "fp8-attn-fa3"); }

}  // namespace

BENCHMARK(BM_fa3_fp64_reference)->Arg(1024)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fa3_fp32)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fa3_fp8_per_tensor)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fa3_fp8_per_tensor_p_e4m3)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fa3_fp8_per_tensor_p_e4m3_amax)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fa3_fp8_block_hadamard)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fa3_fp8_block_hadamard_p256)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fa3_fp8_block)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fa3_fp8_per_tensor_hadamard)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fa3_fp8_per_tensor_hadamard_p_normalized)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fa3_recipe_fp8_attn)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fa3_recipe_fp8_attn_hadamard)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fa3_recipe_fp8_attn_fa3)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);
