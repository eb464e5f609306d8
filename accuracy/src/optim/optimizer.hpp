// Optimizers for training: AdamW and StableAdamW over flat float32 parameter tensors, with
// global gradient-norm clipping, a warmup + cosine learning-rate schedule, master weights in
// fp32 or bf16 (round to nearest or stochastic rounding of the update), and the two Adam
// moments stored in fp32, bf16, fp16 with a scale, or e4m3 with a scale (docs/training.md,
// "Optimizers").
//
// One step, for every tensor p with gradient g (t = 1, 2, ... counts steps):
//   c = min(1, clip_norm / (||G|| + 1e-6))   over all tensors' gradients (clip_norm 0: c = 1)
//   g <- c g;  m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2      (m, v then stored)
//   mh = m / (1 - b1^t);  vh = v / (1 - b2^t)
//   r  = sqrt(mean(g^2 / max(vh, eps^2)))       per tensor: the second-moment signal
//   lr_t from the schedule; StableAdamW: lr_p = lr_t / max(1, r / update_clip), AdamW: lr_t
//   p <- p - lr_t wd p - lr_p mh / (sqrt(vh) + eps)   (wd only where the tensor decays)
// Arithmetic in double per element, then p rounded to the master format. The moments used
// in the update are the stored (rounded) values. Results do not depend on the thread count.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lowp/numerics/uninit_vector.hpp"

namespace lowp::train {

enum class OptimizerKind { adamw, stable_adamw };
enum class MasterFormat { fp32, bf16 };
// fp16_scaled, e4m3_scaled: one power-of-two scale per group of 128 elements (amax to the
// format's largest value). e4m3 stores sqrt(v) instead of v, so that the second moment's
// range (the square of the gradient's) fits the format's.
enum class MomentFormat { fp32, bf16, fp16_scaled, e4m3_scaled };

std::string_view name(OptimizerKind k);
std::string_view name(MasterFormat f);
std::string_view name(MomentFormat f);
// Parse the names above ("adamw", "stable-adamw"; "fp32", "bf16"; "fp32", "bf16", "fp16-scaled",
// "e4m3-scaled"); throw lowp::Error naming the text and the choices.
OptimizerKind parse_optimizer_kind(std::string_view s);
MasterFormat parse_master_format(std::string_view s);
MomentFormat parse_moment_format(std::string_view s);

struct Schedule {
  double lr = 1e-3;              // peak
  std::size_t warmup_steps = 0;  // linear from lr / warmup to lr over steps 1..warmup
  std::size_t total_steps = 0;   // cosine from lr down to min_lr_ratio * lr at total_steps
  double min_lr_ratio = 0.1;
};
// The learning rate of step t (1-based). t past total_steps gives the final rate.
double learning_rate(const Schedule& s, std::size_t t);

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::adamw;
  Schedule schedule{};
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
  double weight_decay = 0.1;
  double clip_norm = 1.0;     // global gradient-norm clipping; 0 disables it
  double update_clip = 1.0;   // StableAdamW's threshold d on r
  MasterFormat master = MasterFormat::fp32;
  bool master_stochastic = false;  // bf16 master: stochastic rounding of the updated weight
  MomentFormat moments = MomentFormat::fp32;
  std::uint64_t seed = 0;     // stochastic rounding: bits from (seed, step, tensor, element)
};

// One parameter tensor of a step. The list (names, sizes, order) must be the same every step.
struct ParamTensor {
  std::string name;
  std::span<float> param;
  std::span<const float> grad;
  bool decay = true;  // weight decay applies (false for norms and biases, as is usual)
};

struct TensorStepStats {
  double rms_g2_over_v = 0;  // r above
  double lr_scale = 1;       // StableAdamW's 1 / max(1, r / d); 1 for AdamW
  std::size_t count = 0;     // elements
};

struct StepStats {
  std::size_t step = 0;      // t of the step just taken
  double lr = 0;             // schedule's lr_t
  double grad_norm = 0;      // ||G|| before clipping
  double clip_scale = 1;     // c
  std::vector<TensorStepStats> tensors;  // in the order given
};

// RMS(g^2/v) over several tensors (a layer): sqrt of the element-weighted mean of r^2.
double combined_rms(std::span<const TensorStepStats> tensors);

// The global L2 norm of several gradients, summed in double in order (deterministic).
double global_grad_norm(std::span<const ParamTensor> tensors);

// Rounds x to bfloat16 (as a float): nearest-even, or stochastically with 16 random bits.
float round_bf16(float x);
float round_bf16_stochastic(float x, std::uint32_t random16);

class Optimizer {
 public:
  // Throws lowp::Error on a bad config (betas outside [0, 1), eps <= 0, negative lr, clip or
  // decay, warmup longer than total_steps).
  explicit Optimizer(OptimizerConfig config);

  const OptimizerConfig& config() const noexcept { return config_; }
  std::size_t steps_done() const noexcept { return t_; }

  // Rounds every parameter to the master format (call once on the initial weights).
  void init_params(std::span<const ParamTensor> tensors) const;

  // One step over all tensors. The first call fixes the tensor list; later calls must pass
  // the same names and sizes (lowp::Error naming the tensor otherwise). A non-finite
  // gradient norm throws lowp::Error naming the first non-finite tensor, before any change.
  // threads: the OpenMP team (0: all); the bits do not depend on it.
  StepStats step(std::span<const ParamTensor> tensors, int threads = 0);

  // The whole state (config checks, step count, moments) as bytes, and back: load() checks
  // the magic, the sizes and the moment format and, given `expect`, that the state's tensors
  // are those (names and sizes, as step() would), throwing lowp::Error on a mismatch before
  // anything changes; a resumed optimizer continues bitwise like the uninterrupted one.
  std::vector<std::uint8_t> save() const;
  void load(std::span<const std::uint8_t> bytes, std::span<const ParamTensor> expect = {});

 private:
  struct Moment {  // one stored moment vector
    std::vector<float> f32;
    std::vector<std::uint16_t> u16;  // bf16 / fp16 codes
    std::vector<std::uint8_t> u8;    // e4m3 codes
    std::vector<float> scales;       // per group of 128: dequantization multiplier
  };
  struct Slot {
    std::string name;
    std::size_t size = 0;
    Moment m, v;
  };
  // One worker's scratch, kept between steps (no page faults per step), each resize written in
  // full (no zero fill as tensor sizes alternate).
  struct Buffers {
    UninitVector<double> m, v, g;
  };
  TensorStepStats step_tensor(const ParamTensor& p, std::size_t k, Slot& slot, const StepStats& st, double bc1,
                              double bc2, Buffers& buf) const;
  // Throws lowp::Error naming the first tensor whose name or size differs from the slot's.
  static void match(std::span<const ParamTensor> tensors, const std::vector<Slot>& slots, const char* what);
  void store(Moment& mo, const UninitVector<double>& x, bool second) const;
  void fetch(const Moment& mo, std::size_t n, UninitVector<double>& x, bool second) const;

  OptimizerConfig config_;
  std::size_t t_ = 0;
  std::vector<Slot> slots_;
  std::vector<Buffers> buffers_;  // per OpenMP thread of step()
};

}  // namespace lowp::train
