// AdamW / StableAdamW with low-precision master weights and moments (optimizer.hpp).
#include "optim/optimizer.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>

#include "lowp/formats/codec.hpp"
#include "lowp/formats/registry.hpp"
#include "lowp/numerics/bits.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/numerics/parallel.hpp"
#include "lowp/numerics/half.hpp"
#include "lowp/numerics/cpu.hpp"
#include "lowp/numerics/rng.hpp"
#include "optim/adam_avx512.hpp"

namespace lowp::train {
namespace {

constexpr std::size_t kGroup = 128;  // elements per moment scale
constexpr char kMagic[8] = {'L', 'O', 'W', 'P', 'O', 'P', 'T', '1'};

const Format& e4m3() {
  static const Format f = parse_format("e4m3");
  return f;
}

// double -> float rounded to odd: a later round-to-nearest to a format with at least two
// fewer significand bits then equals rounding the double directly (no double rounding).
float to_float_odd(double d) {
  float f = static_cast<float>(d);
  if (!std::isfinite(f) || static_cast<double>(f) == d) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  return f32_from_bits(f32_bits(f) | 1u);
}

std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  std::uint64_t z = a ^ (b * 0x9e3779b97f4a7c15ULL) ^ 0xd1b54a32d192ed03ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

template <class E>
E parse_enum(std::string_view s, std::initializer_list<std::pair<std::string_view, E>> names,
             const char* what) {
  std::string list;
  for (const auto& [n, e] : names) {
    if (n == s) return e;
    list.append(list.empty() ? "" : ", ").append(n);
  }
  throw Error("unknown " + std::string(what) + " '" + std::string(s) + "' (known: " + list + ")");
}

// Byte stream helpers for save()/load().
struct Writer {
  std::vector<std::uint8_t> out;
  void raw(const void* p, std::size_t n) {
    if (n == 0) return;
    const auto* b = static_cast<const std::uint8_t*>(p);
    out.insert(out.end(), b, b + n);
  }
  void u64(std::uint64_t x) { raw(&x, sizeof x); }
  template <class T>
  void vec(const std::vector<T>& v) {
    u64(v.size());
    raw(v.data(), v.size() * sizeof(T));
  }
};
struct Reader {
  std::span<const std::uint8_t> in;
  std::size_t pos = 0;
  void raw(void* p, std::size_t n) {
    if (n == 0) return;  // p may be the null data() of an empty vector
    if (n > in.size() - pos)
      throw Error("optimizer state: truncated at byte " + std::to_string(pos) + " of " + std::to_string(in.size()));
    std::memcpy(p, in.data() + pos, n);
    pos += n;
  }
  std::uint64_t u64() {
    std::uint64_t x = 0;
    raw(&x, sizeof x);
    return x;
  }
  template <class T>
  void vec(std::vector<T>& v) {
    const std::uint64_t n = u64();
    if (n > (in.size() - pos) / sizeof(T))
      throw Error("optimizer state: a vector of " + std::to_string(n) + " elements at byte " +
                  std::to_string(pos) + " runs past the end");
    v.resize(n);
    raw(v.data(), n * sizeof(T));
  }
};

// The scalars of the float32 element loops (optim/adam_loops.hpp).
detail::AdamScalars scalars(const OptimizerConfig& c, const StepStats& st, double bc1, double bc2, double lr,
                            double decay) {
  detail::AdamScalars s;
  s.clip_scale = st.clip_scale;
  s.beta1 = c.beta1;
  s.beta2 = c.beta2;
  s.bc1 = bc1;
  s.bc2 = bc2;
  s.eps = c.eps;
  s.lr = lr;
  s.decay = decay;
  return s;
}

}  // namespace

std::string_view name(OptimizerKind k) { return k == OptimizerKind::adamw ? "adamw" : "stable-adamw"; }
std::string_view name(MasterFormat f) { return f == MasterFormat::fp32 ? "fp32" : "bf16"; }
std::string_view name(MomentFormat f) {
  switch (f) {
    case MomentFormat::fp32: return "fp32";
    case MomentFormat::bf16: return "bf16";
    case MomentFormat::fp16_scaled: return "fp16-scaled";
    case MomentFormat::e4m3_scaled: return "e4m3-scaled";
  }
  return "?";
}
OptimizerKind parse_optimizer_kind(std::string_view s) {
  return parse_enum<OptimizerKind>(s, {{"adamw", OptimizerKind::adamw}, {"stable-adamw", OptimizerKind::stable_adamw}},
                                   "optimizer");
}
MasterFormat parse_master_format(std::string_view s) {
  return parse_enum<MasterFormat>(s, {{"fp32", MasterFormat::fp32}, {"bf16", MasterFormat::bf16}},
                                  "master weight format");
}
MomentFormat parse_moment_format(std::string_view s) {
  return parse_enum<MomentFormat>(s,
                                  {{"fp32", MomentFormat::fp32},
                                   {"bf16", MomentFormat::bf16},
                                   {"fp16-scaled", MomentFormat::fp16_scaled},
                                   {"e4m3-scaled", MomentFormat::e4m3_scaled}},
                                  "moment format");
}

double learning_rate(const Schedule& s, std::size_t t) {
  if (t == 0) t = 1;
  if (s.warmup_steps > 0 && t <= s.warmup_steps)
    return s.lr * static_cast<double>(t) / static_cast<double>(s.warmup_steps);
  if (s.total_steps <= s.warmup_steps) return s.lr;
  const double span = static_cast<double>(s.total_steps - s.warmup_steps);
  const double done = std::min(1.0, static_cast<double>(t - s.warmup_steps) / span);
  const double floor = s.min_lr_ratio * s.lr;
  return floor + (s.lr - floor) * 0.5 * (1.0 + std::cos(std::numbers::pi * done));
}

double combined_rms(std::span<const TensorStepStats> tensors) {
  double sum = 0;
  std::size_t n = 0;
  for (const TensorStepStats& t : tensors) {
    sum += t.rms_g2_over_v * t.rms_g2_over_v * static_cast<double>(t.count);
    n += t.count;
  }
  return n ? std::sqrt(sum / static_cast<double>(n)) : 0.0;
}

double global_grad_norm(std::span<const ParamTensor> tensors) {
  double sum = 0;
  for (const ParamTensor& p : tensors)
    for (float g : p.grad) sum += static_cast<double>(g) * g;
  return std::sqrt(sum);
}

float round_bf16(float x) { return bf16_to_f32(f32_to_bf16(x)); }

float round_bf16_stochastic(float x, std::uint32_t random16) {
  const std::uint32_t u = f32_bits(x);
  if ((u & 0x7fffffffu) >= 0x7f800000u) return round_bf16(x);  // Inf, NaN
  // Adding 16 random bits below the kept ones carries into them with probability equal to the
  // discarded fraction; a carry into the exponent is the next binade (or Inf past the max).
  return f32_from_bits((u + (random16 & 0xffffu)) & 0xffff0000u);
}

Optimizer::Optimizer(OptimizerConfig c) : config_(c) {
  const auto bad = [](const std::string& why) { return Error("optimizer: " + why); };
  if (!(c.beta1 >= 0 && c.beta1 < 1) || !(c.beta2 >= 0 && c.beta2 < 1))
    throw bad("beta1 and beta2 must be in [0, 1), got " + std::to_string(c.beta1) + " and " + std::to_string(c.beta2));
  if (!(c.eps > 0)) throw bad("eps must be positive, got " + std::to_string(c.eps));
  if (!(c.schedule.lr >= 0) || !(c.weight_decay >= 0) || !(c.clip_norm >= 0) || !(c.update_clip > 0))
    throw bad("lr, weight decay and clip norm must be >= 0 and the update clip > 0");
  if (!(c.schedule.min_lr_ratio >= 0 && c.schedule.min_lr_ratio <= 1))
    throw bad("min_lr_ratio must be in [0, 1], got " + std::to_string(c.schedule.min_lr_ratio));
  if (c.schedule.total_steps > 0 && c.schedule.warmup_steps > c.schedule.total_steps)
    throw bad("warmup_steps " + std::to_string(c.schedule.warmup_steps) + " exceeds total_steps " +
              std::to_string(c.schedule.total_steps));
}

void Optimizer::init_params(std::span<const ParamTensor> tensors) const {
  if (config_.master != MasterFormat::bf16) return;
  for (const ParamTensor& p : tensors)
    for (float& x : p.param) x = round_bf16(x);
}

void Optimizer::store(Moment& mo, const UninitVector<double>& x, bool second) const {
  const std::size_t n = x.size();
  switch (config_.moments) {
    case MomentFormat::fp32:
      mo.f32.resize(n);
      for (std::size_t i = 0; i < n; ++i) mo.f32[i] = static_cast<float>(x[i]);
      return;
    case MomentFormat::bf16:
      mo.u16.resize(n);
      for (std::size_t i = 0; i < n; ++i) mo.u16[i] = f32_to_bf16(to_float_odd(x[i]));
      return;
    case MomentFormat::fp16_scaled:
    case MomentFormat::e4m3_scaled: break;
  }
  const bool fp16 = config_.moments == MomentFormat::fp16_scaled;
  const bool root = !fp16 && second;  // e4m3 keeps sqrt(v)
  const double fmax = fp16 ? 65504.0 : 448.0;
  const std::size_t groups = (n + kGroup - 1) / kGroup;
  mo.scales.resize(groups);
  if (fp16) mo.u16.resize(n); else mo.u8.resize(n);
  for (std::size_t g = 0; g < groups; ++g) {
    const std::size_t i0 = g * kGroup, i1 = std::min(n, i0 + kGroup);
    double amax = 0;
    for (std::size_t i = i0; i < i1; ++i) amax = std::max(amax, std::fabs(root ? std::sqrt(x[i]) : x[i]));
    // Multiplier s = 2^floor(log2(fmax / amax)), so the group's largest value maps at or below
    // the format's largest; exponents kept where 1/s is a float (subnormals included).
    int e = 0;
    if (amax > 0 && std::isfinite(amax)) {
      std::frexp(fmax / amax, &e);
      e = std::clamp(e - 1, -126, 149);
    }
    const double s = std::ldexp(1.0, e);
    mo.scales[g] = static_cast<float>(std::ldexp(1.0, -e));
    for (std::size_t i = i0; i < i1; ++i) {
      const double y = (root ? std::sqrt(x[i]) : x[i]) * s;
      if (fp16)
        mo.u16[i] = f32_to_f16(to_float_odd(y));
      else
        mo.u8[i] = static_cast<std::uint8_t>(encode(e4m3(), y, CastOptions{Round::nearest_even, true, false}));
    }
  }
}

void Optimizer::fetch(const Moment& mo, std::size_t n, UninitVector<double>& x, bool second) const {
  x.resize(n);
  switch (config_.moments) {
    case MomentFormat::fp32:
      if (mo.f32.empty()) return std::fill(x.begin(), x.end(), 0.0);
      for (std::size_t i = 0; i < n; ++i) x[i] = mo.f32[i];
      return;
    case MomentFormat::bf16:
      if (mo.u16.empty()) return std::fill(x.begin(), x.end(), 0.0);
      for (std::size_t i = 0; i < n; ++i) x[i] = bf16_to_f32(mo.u16[i]);
      return;
    case MomentFormat::fp16_scaled:
    case MomentFormat::e4m3_scaled: break;
  }
  if (mo.scales.empty()) return std::fill(x.begin(), x.end(), 0.0);
  const bool fp16 = config_.moments == MomentFormat::fp16_scaled;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = fp16 ? static_cast<double>(f16_to_f32(mo.u16[i])) : decode(e4m3(), mo.u8[i]);
    const double y = d * static_cast<double>(mo.scales[i / kGroup]);
    x[i] = !fp16 && second ? y * y : y;
  }
}

void Optimizer::match(std::span<const ParamTensor> tensors, const std::vector<Slot>& slots, const char* what) {
  if (tensors.size() != slots.size())
    throw Error(std::string("optimizer: ") + what + " with " + std::to_string(tensors.size()) + " tensors, the state has " +
                std::to_string(slots.size()));
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    const ParamTensor& p = tensors[k];
    if (p.name != slots[k].name || p.param.size() != slots[k].size || p.grad.size() != p.param.size())
      throw Error("optimizer: tensor " + std::to_string(k) + " '" + p.name + "' (" + std::to_string(p.param.size()) +
                  " values, gradient " + std::to_string(p.grad.size()) + ") does not match the state's '" +
                  slots[k].name + "' (" + std::to_string(slots[k].size) + ")");
  }
}

// One tensor's step (the element loops of optimizer.hpp's formulas). The sum of r runs over the
// elements in order, so the tensor's result is the same whichever thread takes it.
TensorStepStats Optimizer::step_tensor(const ParamTensor& p, std::size_t k, Slot& slot, const StepStats& st,
                                       double bc1, double bc2, Buffers& buf) const {
  const OptimizerConfig& c = config_;
  const std::size_t n = slot.size;
  TensorStepStats ts;
  ts.count = n;
  double sum = 0;
  const double e2 = c.eps * c.eps;
  UninitVector<double>& m = buf.m;
  UninitVector<double>& v = buf.v;
  if (c.moments == MomentFormat::fp32) {
    // Stored as float per element: update, store and read back in one pass.
    if (slot.m.f32.empty()) slot.m.f32.assign(n, 0.0f);
    if (slot.v.f32.empty()) slot.v.f32.assign(n, 0.0f);
    UninitVector<double>& term = buf.g;  // the terms of r's sum, added in order below
    term.resize(n);
    const detail::AdamScalars s = scalars(c, st, bc1, bc2, 0, 0);
    (best_isa() == Isa::avx512 ? detail::adam_moments_f32_avx512 : detail::adam_moments_f32)(
        p.grad.data(), slot.m.f32.data(), slot.v.f32.data(), term.data(), n, s);
    for (std::size_t i = 0; i < n; ++i) sum += term[i];
  } else {
    UninitVector<double>& g = buf.g;
    fetch(slot.m, n, m, false);
    fetch(slot.v, n, v, true);
    g.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      g[i] = st.clip_scale * static_cast<double>(p.grad[i]);
      m[i] = c.beta1 * m[i] + (1.0 - c.beta1) * g[i];
      v[i] = c.beta2 * v[i] + (1.0 - c.beta2) * g[i] * g[i];
    }
    store(slot.m, m, false);
    store(slot.v, v, true);
    fetch(slot.m, n, m, false);
    fetch(slot.v, n, v, true);
    for (std::size_t i = 0; i < n; ++i) sum += g[i] * g[i] / std::max(v[i] / bc2, e2);
  }
  ts.rms_g2_over_v = n ? std::sqrt(sum / static_cast<double>(n)) : 0.0;
  if (c.kind == OptimizerKind::stable_adamw) ts.lr_scale = 1.0 / std::max(1.0, ts.rms_g2_over_v / c.update_clip);
  // The clipped rate scales the Adam step only; decay uses lr_t (the paper's reference code).
  const double lr = st.lr * ts.lr_scale;
  const double decay = p.decay ? st.lr * c.weight_decay : 0.0;
  const bool f32 = c.moments == MomentFormat::fp32;
  const float* mf = slot.m.f32.data();
  const float* vf = slot.v.f32.data();
  const auto updated = [&](std::size_t i) {
    const double x = p.param[i];
    const double mi = f32 ? static_cast<double>(mf[i]) : m[i], vi = f32 ? static_cast<double>(vf[i]) : v[i];
    return x - decay * x - lr * (mi / bc1) / (std::sqrt(vi / bc2) + c.eps);
  };
  if (c.master == MasterFormat::fp32 && f32) {  // the default, as its own loop so that it vectorizes
    (best_isa() == Isa::avx512 ? detail::adam_update_f32_avx512 : detail::adam_update_f32)(
        p.param.data(), mf, vf, n, scalars(c, st, bc1, bc2, lr, decay));
  } else if (c.master == MasterFormat::fp32) {
    for (std::size_t i = 0; i < n; ++i) p.param[i] = static_cast<float>(updated(i));
  } else if (c.master_stochastic) {
    const RngKey key = rng_key(mix(mix(c.seed, t_), k));
    for (std::size_t i = 0; i < n; ++i)
      p.param[i] = round_bf16_stochastic(to_float_odd(updated(i)), random_bits(key, i) >> 16);
  } else {
    for (std::size_t i = 0; i < n; ++i) p.param[i] = round_bf16(to_float_odd(updated(i)));
  }
  return ts;
}

StepStats Optimizer::step(std::span<const ParamTensor> tensors, int threads) {
  const OptimizerConfig& c = config_;
  if (threads < 0) throw Error("optimizer: threads = " + std::to_string(threads) + " is negative");
  if (slots_.empty() && t_ == 0) {
    for (const ParamTensor& p : tensors) slots_.push_back(Slot{p.name, p.param.size(), {}, {}});
  }
  match(tensors, slots_, "step");
  StepStats st;
  st.grad_norm = global_grad_norm(tensors);
  if (!std::isfinite(st.grad_norm)) {
    for (const ParamTensor& p : tensors)
      for (float g : p.grad)
        if (!std::isfinite(g)) throw Error("optimizer: non-finite gradient in tensor '" + p.name + "'");
    throw Error("optimizer: the gradient norm overflows");
  }
  if (c.clip_norm > 0) st.clip_scale = std::min(1.0, c.clip_norm / (st.grad_norm + 1e-6));
  st.step = ++t_;
  st.lr = learning_rate(c.schedule, t_);
  const double bc1 = 1.0 - std::pow(c.beta1, static_cast<double>(t_));
  const double bc2 = 1.0 - std::pow(c.beta2, static_cast<double>(t_));
  // Tensors are independent once the global norm is known: threads take whole tensors, the
  // largest first (dynamic), and each tensor's sums run in element order, so the bits do not
  // depend on the thread count. (The global norm above stays one sum in order: splitting it
  // would change its rounding and with it every clipped step.)
  const std::size_t K = tensors.size();
  std::vector<std::size_t> order(K);
  for (std::size_t k = 0; k < K; ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return slots_[a].size > slots_[b].size; });
  st.tensors.resize(K);
  std::size_t total = 0;
  for (const Slot& s : slots_) total += s.size;
  const int team = static_cast<int>(std::min<std::size_t>(
      static_cast<std::size_t>(threads > 0 ? threads : omp_get_max_threads()), std::max<std::size_t>(K, 1)));
  FirstError failure;  // exceptions must not leave an OpenMP region
  const bool parallel = team > 1 && K > 1 && total >= (std::size_t{1} << 16);
  if (buffers_.size() < static_cast<std::size_t>(parallel ? team : 1)) buffers_.resize(static_cast<std::size_t>(team));
#pragma omp parallel num_threads(team) if (parallel)
  {
    Buffers& buf = buffers_[static_cast<std::size_t>(omp_get_thread_num())];
#pragma omp for schedule(dynamic, 1)
    for (std::ptrdiff_t j = 0; j < static_cast<std::ptrdiff_t>(K); ++j) {
      const std::size_t k = order[static_cast<std::size_t>(j)];
      failure.run([&] { st.tensors[k] = step_tensor(tensors[k], k, slots_[k], st, bc1, bc2, buf); });
    }
  }
  failure.rethrow();
  return st;
}

std::vector<std::uint8_t> Optimizer::save() const {
  Writer w;
  w.raw(kMagic, sizeof kMagic);
  w.u64(static_cast<std::uint64_t>(config_.moments));
  w.u64(static_cast<std::uint64_t>(config_.master));
  w.u64(t_);
  w.u64(slots_.size());
  for (const Slot& s : slots_) {
    w.u64(s.name.size());
    w.raw(s.name.data(), s.name.size());
    w.u64(s.size);
    for (const Moment* mo : {&s.m, &s.v}) {
      w.vec(mo->f32);
      w.vec(mo->u16);
      w.vec(mo->u8);
      w.vec(mo->scales);
    }
  }
  return std::move(w.out);
}

void Optimizer::load(std::span<const std::uint8_t> bytes, std::span<const ParamTensor> expect) {
  Reader r{bytes};
  char magic[8];
  r.raw(magic, sizeof magic);
  if (std::memcmp(magic, kMagic, sizeof magic) != 0) throw Error("optimizer state: not a lowp optimizer state (bad magic)");
  const std::uint64_t moments = r.u64(), master = r.u64();
  if (moments != static_cast<std::uint64_t>(config_.moments) || master != static_cast<std::uint64_t>(config_.master))
    throw Error("optimizer state: saved with other moment / master formats than this optimizer's (" +
                std::string(name(config_.moments)) + " / " + std::string(name(config_.master)) + ")");
  const std::uint64_t t = r.u64(), count = r.u64();
  // The trainer counts steps in an int (--steps): a larger count would wrap to a run of billions.
  if (t > static_cast<std::uint64_t>(std::numeric_limits<int>::max()))
    throw Error("optimizer state: implausible step count " + std::to_string(t) + " (a run takes at most " +
                std::to_string(std::numeric_limits<int>::max()) + " steps)");
  if (count > bytes.size()) throw Error("optimizer state: implausible tensor count " + std::to_string(count));
  std::vector<Slot> slots(count);
  for (Slot& s : slots) {
    const std::uint64_t len = r.u64();
    if (len > bytes.size()) throw Error("optimizer state: implausible name length at byte " + std::to_string(r.pos));
    s.name.resize(len);
    r.raw(s.name.data(), len);
    s.size = r.u64();
    for (Moment* mo : {&s.m, &s.v}) {
      r.vec(mo->f32);
      r.vec(mo->u16);
      r.vec(mo->u8);
      r.vec(mo->scales);
      // Exactly the vectors this moment format uses, each empty (before the first step) or full.
      const MomentFormat f = config_.moments;
      const bool scaled = f == MomentFormat::fp16_scaled || f == MomentFormat::e4m3_scaled;
      const std::size_t want = mo->f32.size() + mo->u16.size() + mo->u8.size() == 0 ? 0 : s.size;
      const bool ok = mo->f32.size() == (f == MomentFormat::fp32 ? want : 0) &&
                      mo->u16.size() == (f == MomentFormat::bf16 || f == MomentFormat::fp16_scaled ? want : 0) &&
                      mo->u8.size() == (f == MomentFormat::e4m3_scaled ? want : 0) &&
                      mo->scales.size() == (scaled ? (want + kGroup - 1) / kGroup : 0);
      if (!ok)
        throw Error("optimizer state: tensor '" + s.name + "' (" + std::to_string(s.size) +
                    " values) does not hold " + std::string(name(f)) + " moments of that size");
    }
  }
  if (r.pos != bytes.size()) throw Error("optimizer state: " + std::to_string(bytes.size() - r.pos) + " trailing bytes");
  // A state saved before the first step has no tensor list yet; otherwise it must be the model's.
  if (!expect.empty() && !(slots.empty() && t == 0)) match(expect, slots, "load");
  t_ = t;
  slots_ = std::move(slots);
}

}  // namespace lowp::train
