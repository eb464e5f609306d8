// QuantLinear: the forward and backward passes of a quantized linear layer, on the emulated
// path (quantize, dequantize, float32 GEMM) or SwitchBack's int8 GEMM.
#include "lowp/quant/linear.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "linear_operand.hpp"
#include "lowp/numerics/error.hpp"
#include "switchback.hpp"

namespace lowp::quant {
namespace {

using detail::Int8Operand;
using detail::Operand;
using detail::OperandPlan;

enum Gemm { kFwd = 0, kDgrad = 1, kWgrad = 2 };
constexpr const char* kGemmName[] = {"fwd", "dgrad", "wgrad"};
constexpr const char* kOperandName[3][2] = {{"X", "W"}, {"dY", "W^T"}, {"dY^T", "X^T"}};

const GemmRecipe& gemm_of(const LinearRecipe& r, int g) {
  return g == kFwd ? r.fwd : g == kDgrad ? r.dgrad : r.wgrad;
}
const std::optional<QuantSpec>& spec_of(const GemmRecipe& g, int side) { return side == 0 ? g.a : g.b; }
SpecialQuant special_of(const GemmRecipe& g, int side) { return side == 0 ? g.a_special : g.b_special; }

std::string where(const LinearRecipe& r, int g, int side) {
  return "linear '" + r.name + "' " + kGemmName[g] + " " + kOperandName[g][side];
}

// Whether an operand's quantization is the same at every step (so a weight may be cached).
bool step_independent(const GemmRecipe& g, int side) {
  const auto& s = spec_of(g, side);
  const SpecialQuant sp = special_of(g, side);
  return !g.delayed && g.rotation != hadamard::RotationKind::randomized && g.signs != BlockSigns::per_index &&
         g.signs != BlockSigns::per_step && sp != SpecialQuant::ms_eden && sp != SpecialQuant::quartet_sr &&
         !(s && s->cast.round == Round::stochastic);
}

bool same_spec(const QuantSpec& a, const QuantSpec& b) {
  return a.format == b.format && a.granularity == b.granularity && a.block == b.block && a.rule == b.rule &&
         a.cast.round == b.cast.round && a.cast.saturate == b.cast.saturate &&
         a.cast.flush_subnormals == b.cast.flush_subnormals && a.seed == b.seed && a.pad == b.pad;
}

// Whether the dgrad's W^T is the forward's quantized W, transposed: the same step-independent
// spec, with groups that transposing keeps (one tensor, square tiles), and no rotations.
bool dgrad_reuses_forward_weight(const LinearRecipe& r) {
  const auto &f = r.fwd.b, &d = r.dgrad.b;
  return f && d && same_spec(*f, *d) &&
         (f->granularity == Granularity::tensor || f->granularity == Granularity::tile) &&
         r.fwd.rotation == hadamard::RotationKind::none && r.dgrad.rotation == hadamard::RotationKind::none &&
         r.fwd.b_special == SpecialQuant::none && r.dgrad.b_special == SpecialQuant::none &&
         r.fwd.signs == BlockSigns::none && r.dgrad.signs == BlockSigns::none && !r.dgrad.accumulation &&
         !r.backward_from_forward_operands &&
         step_independent(r.fwd, 1) && step_independent(r.dgrad, 1);
}

void validate(const LinearRecipe& r, std::size_t K, std::size_t N) {
  if (K == 0 || N == 0)
    throw Error("linear '" + r.name + "': in_features " + std::to_string(K) + " and out_features " +
                std::to_string(N) + " must both be positive");
  for (int g = 0; g < 3; ++g) {
    const GemmRecipe& gr = gemm_of(r, g);
    if (gr.rotation == hadamard::RotationKind::block_diagonal && gr.rotation_block == 0)
      throw Error("linear '" + r.name + "' " + kGemmName[g] + ": block_diagonal rotation with block 0");
    if (gr.signs != BlockSigns::none && gr.rotation != hadamard::RotationKind::block_diagonal)
      throw Error("linear '" + r.name + "' " + kGemmName[g] + ": random signs need a block_diagonal rotation");
    if (gr.signs == BlockSigns::fixed && gr.rotation_block != 16)
      throw Error("linear '" + r.name + "' " + kGemmName[g] + ": TransformerEngine's fixed signs need 16-blocks, not " +
                  std::to_string(gr.rotation_block));
    if (gr.accumulation && (gr.accumulation->man_bits < 1 || gr.accumulation->man_bits > 23 ||
                            gr.accumulation->exp_bits < 2 || gr.accumulation->exp_bits > 8))
      throw Error("linear '" + r.name + "' " + kGemmName[g] + ": accumulator needs man_bits in [1, 23] and exp_bits in [2, 8]");
    for (int side = 0; side < 2; ++side) {
      const auto& s = spec_of(gr, side);
      if (special_of(gr, side) != SpecialQuant::none && (!s || gr.delayed))
        throw Error(where(r, g, side) + ": a special quantizer needs a spec and no delayed scaling");
      if (special_of(gr, side) == SpecialQuant::quest && (g != kFwd || gr.signs != BlockSigns::none))
        throw Error(where(r, g, side) + ": the quest quantizer (and its clip mask) is for the forward GEMM only");
      if (gr.delayed && s && s->granularity != Granularity::tensor)
        throw Error(where(r, g, side) + ": delayed scaling needs per-tensor granularity, not " + describe(*s));
      if (gr.delayed && s && s->rule != ScaleRule::amax && s->rule != ScaleRule::amax_pow2 &&
          s->rule != ScaleRule::absmax_int)
        throw Error(where(r, g, side) + ": delayed scaling needs the amax, pow2 or int rule, not " + describe(*s));
    }
  }
  if (r.backward_from_forward_operands &&
      (!r.fwd.a || !r.fwd.b || r.fwd.signs != BlockSigns::none || r.wgrad_uses_quantized_x ||
       r.engine != LinearEngine::emulated || !step_independent(r.fwd, 1)))
    throw Error("linear '" + r.name + "': backward_from_forward_operands needs quantized forward operands, no forward "
                "signs, a step-independent forward W, no wgrad_uses_quantized_x and the emulated engine");
  if (r.engine != LinearEngine::switchback_int8) return;
  for (int g : {kFwd, kDgrad}) {
    const GemmRecipe& gr = gemm_of(r, g);
    if (gr.rotation != hadamard::RotationKind::none || gr.delayed || gr.accumulation ||
        gr.a_special != SpecialQuant::none || gr.b_special != SpecialQuant::none)
      throw Error("linear '" + r.name + "' " + kGemmName[g] +
                  ": the int8 GEMM path takes no rotation, delayed scaling, accumulator or special quantizer");
    for (int side = 0; side < 2; ++side) {
      const auto& s = spec_of(gr, side);
      if (!s) throw Error(where(r, g, side) + ": the int8 GEMM path needs an int8 spec, not float32");
      detail::check_int8_spec(*s, where(r, g, side));
      if (s->cast.round != Round::nearest_even)
        throw Error(where(r, g, side) + ": the int8 GEMM path rounds to nearest-even only");
    }
  }
}

}  // namespace

struct QuantLinear::State {
  LinearRecipe r;
  std::size_t K = 0, N = 0;
  bool has_bias = false;
  std::vector<float> W, b, dW, db;

  // From the last forward.
  std::size_t M = 0;
  bool have_forward = false;
  detail::ScratchFloats X;  // float32 X, or the forward's quantized X (wgrad_uses_quantized_x)
  bool borrow = false;      // borrow_input: keep X's pointer, not a copy
  const float* x_borrowed = nullptr;  // the float32 X of the last forward, when borrowed (reset by each forward)
  // Keeps the forward's float32 X for the backward: its pointer when borrowing, else a copy.
  void keep_x(const float* x, std::size_t n) {
    if (borrow) {
      x_borrowed = x;
      X.clear();
    } else {
      X.assign(x, x + n);
    }
  }
  Int8Operand Xq;        // the forward's int8 X (memory-efficient SwitchBack: instead of X)
  Int8Operand dYq;       // the dgrad's int8 dY (kept: no page faults per step)

  // Weight cache: [0] the forward's W, [1] the dgrad's W^T.
  std::array<bool, 2> w_valid{false, false};
  std::array<Operand, 2> w_float;
  std::array<Int8Operand, 2> w_int8;

  std::array<std::optional<DelayedScaling>, 6> delayed;  // per (gemm, side)

  // Quest clip masks of the forward (X of the last forward; W of the cached weight) and the
  // forward's rotation of that step, to gate the straight-through gradients in its basis.
  std::vector<std::uint8_t> mask_x, mask_w;
  hadamard::Rotation fwd_rot;

  bool collect = false;
  std::array<OperandStats, 6> stats{};
  bool capture = false;
  std::array<std::vector<float>, 6> captured;

  Operand opA, opB;  // scratch
  std::vector<float> scratch;

  bool int8() const { return r.engine == LinearEngine::switchback_int8; }

  OperandPlan plan(int g, int side, std::uint64_t seed) {
    const GemmRecipe& gr = gemm_of(r, g);
    OperandPlan p;
    p.spec = &spec_of(gr, side);
    p.rotation.kind = gr.rotation;
    p.rotation.block = gr.rotation_block;
    p.rotation.seed = detail::mix_seed(seed, 0x100 + g);  // the same for both sides: R cancels
    p.seed = detail::mix_seed(detail::mix_seed(seed, *p.spec ? (*p.spec)->seed : 0), 2 * g + side + 1);
    p.what = where(r, g, side);
    p.signs = gr.signs;
    // Quartet draws one sign vector per backward pass for both backward GEMMs.
    p.signs_seed = gr.signs == BlockSigns::per_step ? detail::mix_seed(seed, 0x1ff) : p.rotation.seed;
    p.special = special_of(gr, side);
    if (g == kFwd && p.special == SpecialQuant::quest) p.clip_mask = side == 0 ? &mask_x : &mask_w;
    if (collect) p.stats = &stats[2 * g + side];
    return p;
  }

  // Prepares an operand (delayed scaling: with the scale from its history, which then records
  // the amax of this step).
  void prepare(const float* src, std::size_t rows, std::size_t cols, bool transpose, int g, int side,
               std::uint64_t seed, Operand& out) {
    OperandPlan p = plan(g, side, seed);
    if (auto& d = delayed[2 * g + side]) p.delayed = &*d;
    detail::prepare_operand(src, rows, cols, transpose, p, out);
  }

  // C (M x N) (+)= A B^T on the GEMM's accumulator: float32, or gemm_emulated's.
  std::vector<float> mat_a, mat_b, acc_tmp, acc_tmp2;
  void run_gemm(int g, const Operand& A, const Operand& B, float* C, std::size_t M, std::size_t N, std::size_t K,
                bool accumulate, std::uint64_t seed) {
    const auto& acc = gemm_of(r, g).accumulation;
    if (!acc && !capture) return detail::gemm_operands(A, B, C, M, N, K, accumulate);
    const auto natural = [K](const Operand& op, std::size_t rows, std::vector<float>& buf) {
      if (!op.transposed) return op.data;
      buf.resize(rows * K);
      detail::transpose(op.data, buf.data(), K, rows);
      return static_cast<const float*>(buf.data());
    };
    const float* a = natural(A, M, mat_a);
    const float* b = natural(B, N, mat_b);
    if (capture) {
      captured[2 * g].assign(a, a + M * K);
      captured[2 * g + 1].assign(b, b + N * K);
      if (!acc) return detail::gemm_operands(A, B, C, M, N, K, accumulate);
    }
    Accumulation ac = *acc;
    ac.seed = detail::mix_seed(seed, 0x200 + g);
    if (!accumulate) return gemm_emulated(a, b, C, M, N, K, ac);
    acc_tmp.resize(M * N);
    gemm_emulated(a, b, acc_tmp.data(), M, N, K, ac);
    for (std::size_t i = 0; i < M * N; ++i) C[i] += acc_tmp[i];
  }

  // A gradient with respect to X or W (rows x K): the straight-through gradient of a quest
  // operand is zero where the forward clipped, in the forward's rotated basis. `rotated`: the
  // gradient is in that basis already (backward_from_forward_operands): g <- (g . mask) R^T;
  // otherwise g <- ((g R) . mask) R^T, and nothing without a mask.
  void finish_grad(float* grad, std::size_t rows, const std::vector<std::uint8_t>* mask, bool rotated) const {
    const std::size_t n = rows * K;
    if (mask && mask->size() != n)
      throw Error("linear '" + r.name + "': clip mask of " + std::to_string(mask->size()) +
                  " elements for a gradient of " + std::to_string(n));
    if (!mask && !rotated) return;
    const bool rotate = fwd_rot.kind != hadamard::RotationKind::none;
    if (rotate && !rotated) fwd_rot.apply(grad, rows, K);
    if (mask)
      for (std::size_t i = 0; i < n; ++i) grad[i] = (*mask)[i] ? grad[i] : 0.0f;
    if (rotate) fwd_rot.apply_inverse(grad, rows, K);
  }

  void check_sizes() const {
    if (W.size() != N * K || b.size() != (has_bias ? N : 0) || dW.size() != N * K ||
        db.size() != (has_bias ? N : 0))
      throw Error("linear '" + r.name + "': weight/bias/gradient sizes changed (weight " +
                  std::to_string(W.size()) + ", expected " + std::to_string(N * K) + ")");
  }

  // The weight operand of GEMM g (0: W for fwd, 1: W^T for dgrad), cached when possible.
  const Operand& weight_float(int g, std::uint64_t seed) {
    const int slot = g == kFwd ? 0 : 1;
    if (w_valid[slot]) return w_float[slot];
    if (g == kDgrad && dgrad_reuses_forward_weight(r)) {
      const Operand& f = weight_float(kFwd, seed);
      w_float[1].own.clear();
      w_float[1].data = f.data;
      w_float[1].transposed = !f.transposed;
      w_valid[1] = true;
      return w_float[1];
    }
    // Quartet: the dgrad re-quantizes the forward's quantized W (in its rotated basis).
    const float* src = g == kDgrad && r.backward_from_forward_operands ? weight_float(kFwd, seed).data : W.data();
    prepare(src, N, K, g == kDgrad, g, 1, seed, w_float[slot]);
    w_valid[slot] = step_independent(gemm_of(r, g), 1);
    return w_float[slot];
  }
  const Int8Operand& weight_int8(int g) {
    const int slot = g == kFwd ? 0 : 1;
    if (w_valid[slot]) return w_int8[slot];
    const QuantSpec& spec = *spec_of(gemm_of(r, g), 1);
    if (g == kDgrad && spec.granularity == Granularity::tensor &&
        r.fwd.b->granularity == Granularity::tensor) {
      // A tensor-wise W^T has the forward's codes and scale: W^T stored transposed is W.
      const Int8Operand& w = weight_int8(kFwd);
      Int8Operand& t = w_int8[1];
      t.rows = K;
      t.cols = N;
      t.per_row = false;
      t.transposed = !w.transposed;
      t.scale = w.scale;
      t.q.clear();
      t.shared = w.codes();
    } else {
      detail::quantize_int8_operand(W.data(), N, K, g == kDgrad, spec, w_int8[slot]);
    }
    w_valid[slot] = true;
    return w_int8[slot];
  }
};

QuantLinear::QuantLinear(LinearRecipe recipe, std::size_t in_features, std::size_t out_features, bool bias)
    : s_(std::make_unique<State>()) {
  validate(recipe, in_features, out_features);
  s_->r = std::move(recipe);
  s_->K = in_features;
  s_->N = out_features;
  s_->has_bias = bias;
  s_->W.assign(in_features * out_features, 0.0f);
  s_->dW.assign(in_features * out_features, 0.0f);
  s_->b.assign(bias ? out_features : 0, 0.0f);
  s_->db.assign(bias ? out_features : 0, 0.0f);
  for (int g = 0; g < 3; ++g)
    for (int side = 0; side < 2; ++side)
      if (const auto& spec = spec_of(gemm_of(s_->r, g), side); spec && gemm_of(s_->r, g).delayed)
        s_->delayed[2 * g + side].emplace(spec->format, s_->r.delayed_scaling);
}

QuantLinear::~QuantLinear() = default;
QuantLinear::QuantLinear(QuantLinear&&) noexcept = default;
QuantLinear& QuantLinear::operator=(QuantLinear&&) noexcept = default;

std::vector<float>& QuantLinear::weight() {
  invalidate_weight_cache();
  return s_->W;
}
const std::vector<float>& QuantLinear::weight() const { return s_->W; }
std::vector<float>& QuantLinear::bias() { return s_->b; }
std::vector<float>& QuantLinear::weight_grad() { return s_->dW; }
std::vector<float>& QuantLinear::bias_grad() { return s_->db; }
const LinearRecipe& QuantLinear::recipe() const { return s_->r; }
void QuantLinear::borrow_input(bool on) { s_->borrow = on; }

void QuantLinear::invalidate_weight_cache() { s_->w_valid = {false, false}; }

double OperandStats::sqnr_db() const {
  return noise > 0 ? 10.0 * std::log10(signal / noise) : std::numeric_limits<double>::infinity();
}

void QuantLinear::collect_stats(bool on) { s_->collect = on; }
void QuantLinear::capture_operands(bool on) { s_->capture = on; }
std::array<std::vector<float>, 6> QuantLinear::take_operands() { return std::exchange(s_->captured, {}); }

std::array<OperandStats, 6> QuantLinear::take_stats() {
  const auto out = s_->stats;
  s_->stats = {};
  return out;
}

std::vector<std::uint8_t> QuantLinear::save_state() const {
  // Per (gemm, side) with delayed scaling: u32 count, count floats (newest first), the scale.
  std::vector<std::uint8_t> out;
  const auto put = [&out](const void* p, std::size_t n) {
    const auto* b = static_cast<const std::uint8_t*>(p);
    out.insert(out.end(), b, b + n);
  };
  for (const auto& d : s_->delayed) {
    if (!d) continue;
    const auto n = static_cast<std::uint32_t>(d->history().size());
    const float scale = d->scale();
    put(&n, sizeof n);
    put(d->history().data(), n * sizeof(float));
    put(&scale, sizeof scale);
  }
  return out;
}

void QuantLinear::load_state(std::span<const std::uint8_t> bytes) {
  std::size_t pos = 0;
  const auto get = [&](void* p, std::size_t n) {
    if (n == 0) return;  // p may be the null data() of an empty vector
    if (n > bytes.size() - pos)
      throw Error("linear '" + s_->r.name + "': layer state truncated at byte " + std::to_string(pos) + " of " +
                  std::to_string(bytes.size()));
    std::memcpy(p, bytes.data() + pos, n);
    pos += n;
  };
  std::array<std::pair<std::vector<float>, float>, 6> loaded;
  for (std::size_t i = 0; i < 6; ++i) {
    if (!s_->delayed[i]) continue;
    std::uint32_t n = 0;
    get(&n, sizeof n);
    if (n > s_->delayed[i]->config().history_len)
      throw Error("linear '" + s_->r.name + "': layer state holds an amax history of " + std::to_string(n) +
                  " values, longer than the recipe's " + std::to_string(s_->delayed[i]->config().history_len));
    loaded[i].first.resize(n);
    get(loaded[i].first.data(), n * sizeof(float));
    get(&loaded[i].second, sizeof(float));
  }
  if (pos != bytes.size())
    throw Error("linear '" + s_->r.name + "': layer state has " + std::to_string(bytes.size() - pos) +
                " bytes this recipe does not use");
  for (std::size_t i = 0; i < 6; ++i)
    if (s_->delayed[i]) s_->delayed[i]->restore(std::move(loaded[i].first), loaded[i].second);
  invalidate_weight_cache();
}

void QuantLinear::defer_amax(bool on) {
  for (auto& d : s_->delayed)
    if (d) d->defer(on);
}

std::vector<float> QuantLinear::take_pending_amax() {
  std::vector<float> out;
  for (auto& d : s_->delayed)
    if (d) out.push_back(d->take_pending());
  return out;
}

void QuantLinear::commit_amax(std::span<const float> amax) {
  const auto want = static_cast<std::size_t>(
      std::count_if(s_->delayed.begin(), s_->delayed.end(), [](const auto& d) { return d.has_value(); }));
  if (amax.size() != want)
    throw Error("linear '" + s_->r.name + "': " + std::to_string(amax.size()) + " amax values for " +
                std::to_string(want) + " delayed-scaling histories");
  std::size_t i = 0;
  for (auto& d : s_->delayed)
    if (d) {
      const float a = amax[i++];
      if (a != -INFINITY) d->commit(a);
    }
}

void QuantLinear::forward(const float* X, std::size_t M, float* Y, std::uint64_t seed) {
  State& s = *s_;
  const std::string name = "linear '" + s.r.name + "' forward";
  if (M == 0) throw Error(name + ": M = 0 rows");
  if (X == nullptr || Y == nullptr) throw Error(name + ": null X or Y pointer");
  s.check_sizes();
  const std::size_t K = s.K, N = s.N;
  s.have_forward = false;
  s.x_borrowed = nullptr;
  if (s.int8()) {
    detail::quantize_int8_operand(X, M, K, false, *s.r.fwd.a, s.Xq);
    detail::int8_gemm_dequant(s.Xq, s.weight_int8(kFwd), s.has_bias ? s.b.data() : nullptr, Y);
    if (s.r.wgrad_uses_quantized_x) {
      s.X.clear();  // the backward dequantizes Xq
    } else {
      s.keep_x(X, M * K);
    }
  } else {
    // opA holds M x K floats here, M x N in the backward, and trades buffers with X below: both
    // keep room for the larger, or the backward reallocates (and page-faults) every step.
    s.opA.own.reserve(M * std::max(K, N));
    s.X.reserve(M * std::max(K, N));
    s.mask_x.clear();
    s.fwd_rot = s.plan(kFwd, 0, seed).rotation;
    s.fwd_rot.size = K;
    s.prepare(X, M, K, false, kFwd, 0, seed, s.opA);
    s.run_gemm(kFwd, s.opA, s.weight_float(kFwd, seed), Y, M, N, K, false, seed);
    if (s.has_bias) {
      for (std::size_t i = 0; i < M; ++i)
        for (std::size_t j = 0; j < N; ++j) Y[i * N + j] += s.b[j];
    }
    // Swapped, not moved: the scratch keeps X's old buffer (no allocation, no page faults per step).
    if (s.r.backward_from_forward_operands) {
      std::swap(s.X, s.opA.own);  // the quantized X in the forward's rotated basis
    } else if (s.r.wgrad_uses_quantized_x && !s.opA.own.empty()) {
      std::swap(s.X, s.opA.own);  // natural layout: X is never transposed here
      if (s.r.fwd.rotation != hadamard::RotationKind::none) {
        hadamard::Rotation rot = s.plan(kFwd, 0, seed).rotation;
        rot.size = K;
        rot.apply_inverse(s.X.data(), M, K);
      }
    } else {
      s.keep_x(X, M * K);
    }
  }
  s.M = M;
  s.have_forward = true;
}

void QuantLinear::backward(const float* dY, float* dX, std::uint64_t seed) {
  State& s = *s_;
  const std::string name = "linear '" + s.r.name + "' backward";
  if (!s.have_forward) throw Error(name + ": no forward pass to differentiate");
  if (dY == nullptr) throw Error(name + ": null dY pointer");
  s.check_sizes();
  const std::size_t M = s.M, K = s.K, N = s.N;

  if (s.has_bias) {
    // db = sum over rows of dY, in double, rows in order (the same at any thread count).
    std::vector<double> acc(N, 0.0);
    for (std::size_t i = 0; i < M; ++i)
      for (std::size_t j = 0; j < N; ++j) acc[j] += dY[i * N + j];
    for (std::size_t j = 0; j < N; ++j) s.db[j] += static_cast<float>(acc[j]);
  }

  if (dX != nullptr) {  // dX = dY W: a = dY (M x N), b = W^T (K x N)
    if (s.int8()) {
      detail::quantize_int8_operand(dY, M, N, false, *s.r.dgrad.a, s.dYq);
      detail::int8_gemm_dequant(s.dYq, s.weight_int8(kDgrad), nullptr, dX);
    } else {
      s.prepare(dY, M, N, false, kDgrad, 0, seed, s.opA);
      s.run_gemm(kDgrad, s.opA, s.weight_float(kDgrad, seed), dX, M, K, N, false, seed);
      s.finish_grad(dX, M, s.r.fwd.a_special == SpecialQuant::quest ? &s.mask_x : nullptr,
                    s.r.backward_from_forward_operands);
    }
  }

  // dW += dY^T X: a = dY^T (N x M), b = X^T (K x M), reduction over the M tokens.
  const float* X = s.x_borrowed ? s.x_borrowed : s.X.data();
  if (s.int8() && s.r.wgrad_uses_quantized_x) {
    s.scratch.resize(M * K);
    detail::dequantize_int8(s.Xq, s.scratch.data());
    X = s.scratch.data();
  }
  s.prepare(dY, M, N, true, kWgrad, 0, seed, s.opA);
  s.prepare(X, M, K, true, kWgrad, 1, seed, s.opB);
  if (s.r.fwd.b_special == SpecialQuant::quest || s.r.backward_from_forward_operands) {
    std::vector<float>& g = s.acc_tmp2;
    g.resize(N * K);
    s.run_gemm(kWgrad, s.opA, s.opB, g.data(), N, K, M, false, seed);
    s.finish_grad(g.data(), N, s.r.fwd.b_special == SpecialQuant::quest ? &s.mask_w : nullptr,
                  s.r.backward_from_forward_operands);
    for (std::size_t i = 0; i < N * K; ++i) s.dW[i] += g[i];
  } else {
    s.run_gemm(kWgrad, s.opA, s.opB, s.dW.data(), N, K, M, true, seed);
  }
}

}  // namespace lowp::quant
