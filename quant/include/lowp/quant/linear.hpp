// A quantized linear layer Y = X W^T (+ b), forward and backward, and the named recipes.
//
// X: M x K (tokens x in_features), W: N x K (out x in), Y: M x N, all row-major float32.
// Backward: dX = dY W (M x K), dW = dY^T X (N x K), db = sum over rows of dY.
// Each of the three GEMMs quantizes its two operands with its own spec (format, granularity,
// scale rule, rounding) after an optional rotation of the reduction dimension, then runs a
// float32 GEMM on the dequantized data (or, for SwitchBack, the real int8 GEMM).
// Operand orientation: every operand is quantized as the GEMM reads it, with its reduction
// dimension as columns: dgrad's b is W^T (K x N, reduction N), wgrad's a and b are dY^T (N x M)
// and X^T (K x M), reduction M (tokens). So `row` granularity always means one scale per
// output row/column of that GEMM, and 1-D blocks always run along its reduction dimension.
//
// The switchback_int8 engine runs fwd and dgrad through gemm_s8s8_s32: both operands must be
// int8_sym with the `int` (absmax) rule and tensor or row granularity. With sa (per row of a,
// or one value) and sb (per row of b) the dequantization multipliers absmax / 127:
//   q = (int8) nearbyint(x * (127 / absmax))          (ties to even; |q| <= 127)
//   C[i][j] = (float)acc[i][j] * (sa[i] * sb[j])  (+ bias[j] in the forward, added last)
// An all-zero group has scale 0 (codes 0); a group holding a NaN or Inf gives NaN outputs.
// Its wgrad runs on the emulated path (bf16 operands, float32 accumulation).
#pragma once
#include <cstddef>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>
#include "lowp/hadamard/rotation.hpp"
#include "lowp/quant/delayed_scaling.hpp"
#include "lowp/quant/gemm.hpp"
#include "lowp/quant/quantize.hpp"

namespace lowp::quant {

// Operand quantizers that a QuantSpec cannot express (docs/quantization.md, "Training
// quantizers"). Each acts on the operand after its rotation, along the reduction dimension,
// in E2M1 and ignores the spec's rule (the spec still names format and block):
//   quest          Quartet's forward (QuEST): per group of 32 the scale is the power of two
//                  2^floor(log2(2.92247856 / 6 * std + 1e-8)) (std over the group, biased),
//                  round to nearest, saturate at 6; the elements with |x / scale| < 6 form the
//                  clip mask that gates the straight-through gradient of this operand (fwd X
//                  and W only).
//   quartet_sr     Quartet's backward: per group of 32 the power of two 2^e = 2^floor(log2
//                  amax); the elements times 3 / 2^e (the largest lands in [3, 6), so nothing
//                  saturates) rounded stochastically to E2M1, values code * 2^e / 3. (The
//                  kernels keep code * 2^e and multiply the GEMM's product by 1/9: the same to
//                  float32 rounding.)
//   four_over_six  NVFP4 (16-blocks, UE4M3 block scales, float32 tensor scale amax / (6 * 256))
//                  with each block scaled to 6 or to 4, whichever has the smaller squared error.
//   ms_eden        NVFP4 round-to-nearest codes, then per block the scale times
//                  <x, x> / <x, q> (q the dequantized block) stochastically rounded to UE4M3:
//                  unbiased after a random rotation (Quartet II's MS-EDEN).
enum class SpecialQuant : std::uint8_t { none, quest, four_over_six, ms_eden, quartet_sr };

// The random signs d = +-1 that make a block_diagonal rotation a random Hadamard transform
// (the same for both operands of the GEMM, so they cancel in the product):
//   per_index  an independent sign per reduction index, before the blocks, drawn anew every
//              step (x D R)
//   fixed      TransformerEngine's NVFP4 wgrad vector, one fixed 16-entry sign vector repeated
//              over the 16-blocks and applied before each block's Hadamard (x D H): the same
//              at every step (block 16 only)
//   per_step   Quartet's backward: one block-length sign vector drawn per backward pass from
//              the step seed, the same for the dgrad and the wgrad, applied after each block's
//              Hadamard (x H D)
enum class BlockSigns : std::uint8_t { none, per_index, fixed, per_step };

// One GEMM C = A B^T: how A and B are quantized (nullopt: float32), and the rotation applied
// to both along the reduction dimension first (RotationKind::none: no rotation; the size is
// filled in from the shape).
struct GemmRecipe {
  std::optional<QuantSpec> a, b;
  hadamard::RotationKind rotation = hadamard::RotationKind::none;
  std::size_t rotation_block = 0;  // block_diagonal
  bool delayed = false;  // per-tensor scales from an amax history (LinearRecipe::delayed_scaling)
  BlockSigns signs = BlockSigns::none;  // block_diagonal only
  SpecialQuant a_special = SpecialQuant::none, b_special = SpecialQuant::none;
  // The accumulator the GEMM emulates (gemm_emulated); nullopt: float32 (Eigen).
  std::optional<Accumulation> accumulation;
};

enum class LinearEngine { emulated, switchback_int8 };

// What quantizing one GEMM operand did (after its rotation): the signal and the noise
// sum x^2 and sum (x - q)^2, the elements clipped at the format's largest value times their
// group's scale (|x| above it), and the nonzero elements that became zero.
struct OperandStats {
  std::size_t count = 0, saturated = 0, flushed = 0;
  double signal = 0, noise = 0;
  double sqnr_db() const;  // 10 log10(signal / noise); +inf when noise is 0
};

struct LinearRecipe {
  std::string name;
  std::string note;  // one line: which paper / library it mirrors
  LinearEngine engine = LinearEngine::emulated;
  GemmRecipe fwd;    // Y  = X  W^T : a = X,  b = W
  GemmRecipe dgrad;  // dX = dY W   : a = dY, b = W^T
  GemmRecipe wgrad;  // dW = dY^T X : a = dY^T, b = X^T
  // The wgrad reads X as the forward quantized it (dequantized; inverse-rotated if fwd
  // rotates) instead of a float32 copy: memory-efficient SwitchBack keeps only the int8 X.
  bool wgrad_uses_quantized_x = false;
  // The dgrad's W^T and the wgrad's X^T are the forward's quantized W and X, left in the
  // forward's rotated basis (Quartet's kernels re-quantize those, not the float W and X):
  // both gradients then come out in that basis and go through the forward rotation's inverse
  // after the quest clip masks. Needs forward specs on X and W and the emulated engine.
  bool backward_from_forward_operands = false;
  DelayedScalingConfig delayed_scaling{};  // for the GEMMs marked `delayed`
};

// Whether a pass's bits depend on the seed forward/backward get: stochastic rounding of an
// operand or of the accumulator, random rotations or signs, MS-EDEN or Quartet's SR quantizer.
// Without any of these, two passes on the same inputs with different seeds give the same bits.
bool uses_seed(const LinearRecipe& recipe);

// One line: "fwd X=<spec> W=<spec> [rot]; dgrad dY=... W^T=...; wgrad dY^T=... X^T=..."
// (operands without a spec print as f32).
std::string describe(const LinearRecipe& recipe);
// The same per GEMM: format, granularity, scale rule and rounding of each operand, its
// special quantizer, the rotation, delayed scaling and the accumulator, e.g.
// "dY=float8_e5m2:tensor:amax:nearest:sat W^T=float8_e4m3fn:tensor:amax:nearest:sat".
struct GemmDescription {
  std::string fwd, dgrad, wgrad;
};
GemmDescription describe_gemms(const LinearRecipe& recipe);

// The built-in presets, in a fixed order (docs/quantization.md, "Quantized linear layers").
std::span<const LinearRecipe> linear_presets();
// Looks a preset up by name; throws lowp::Error listing the names when unknown.
const LinearRecipe& linear_preset(std::string_view name);

// The layer. Holds W (and b), the gradients, and what the backward pass needs from the
// forward (the quantized or float X, per the recipe), plus delayed-scaling state.
class QuantLinear {
 public:
  // Throws lowp::Error on zero features or a recipe the engine cannot run (e.g. a
  // switchback_int8 recipe whose fwd/dgrad specs are not int8 row/tensor absmax). W, b start
  // at zero; gradients start at zero.
  QuantLinear(LinearRecipe recipe, std::size_t in_features, std::size_t out_features, bool bias);
  ~QuantLinear();
  QuantLinear(QuantLinear&&) noexcept;
  QuantLinear& operator=(QuantLinear&&) noexcept;

  // The non-const weight() also drops the cached quantized weight (the caller may
  // write through the reference); edits made later through a kept reference need
  // invalidate_weight_cache().
  std::vector<float>& weight();   // N x K
  const std::vector<float>& weight() const;  // reading keeps the cache
  std::vector<float>& bias();     // N (empty without bias)
  std::vector<float>& weight_grad();
  std::vector<float>& bias_grad();

  // Y (M x N) from X (M x K). `seed` drives the stochastic rounding and the random-sign
  // rotations of this step (mixed with each spec's own seed and the operand's position).
  // The quantized W is cached and reused while the weight is unchanged, unless its
  // quantization depends on the step (stochastic rounding, randomized rotation, delayed
  // scaling). Throws lowp::Error on M = 0, null pointers, or a shape a spec or rotation
  // cannot take (the message names the GEMM and operand).
  void forward(const float* X, std::size_t M, float* Y, std::uint64_t seed = 0);
  // dX (M x K) from dY (M x N) for the last forward; adds into weight_grad()/bias_grad().
  // dX may be null when the input gradient is not needed. Throws lowp::Error if no forward
  // came first or weight/bias sizes were changed.
  void backward(const float* dY, float* dX, std::uint64_t seed = 0);
  // Where the backward reads a float32 X from: by default the forward keeps a copy; with
  // borrow_input(true) it keeps the pointer instead, and the caller must leave X unchanged until
  // the backward (a trainer's activations, alive through the step, spare a copy of each). Recipes
  // that keep the quantized X are unaffected.
  void borrow_input(bool on);
  // Drops the cached quantized weight (after editing the weight through a kept reference).
  void invalidate_weight_cache();

  // The state carried from step to step besides W and b (the delayed-scaling amax histories
  // and scales), as bytes for checkpoints; load_state() puts it back so training resumes
  // bitwise, and throws lowp::Error when the bytes do not fit this layer's recipe.
  std::vector<std::uint8_t> save_state() const;
  void load_state(std::span<const std::uint8_t> bytes);

  // Delayed scaling over several forward/backward passes that form one step (micro-batches,
  // data-parallel ranks): while deferred, the passes quantize with the scales of the earlier
  // steps and each amax history only keeps the largest amax seen (DelayedScaling::defer).
  // take_pending_amax() returns one value per history (-inf: none recorded) and clears them;
  // commit_amax() records one step from such values (-inf: the history is left alone) and
  // throws lowp::Error when their count differs.
  void defer_amax(bool on);
  std::vector<float> take_pending_amax();
  void commit_amax(std::span<const float> amax);

  // With collection on, every quantized operand adds to its OperandStats, indexed
  // 2 * gemm + side (0 fwd X, 1 fwd W, 2 dgrad dY, 3 dgrad W^T, 4 wgrad dY^T, 5 wgrad X^T).
  // A cached weight is counted when it is quantized, not on every reuse; float32 operands
  // and the int8 GEMM's operands are not counted. take_stats() returns them and resets.
  void collect_stats(bool on);
  std::array<OperandStats, 6> take_stats();
  // With capture on, each emulated GEMM keeps its two operands as it reads them (rotated and
  // fake-quantized, row-major with the reduction dimension as columns; indexed as the stats),
  // replacing those of the previous pass (`lowp golden`). take_operands() returns and clears them.
  void capture_operands(bool on);
  std::array<std::vector<float>, 6> take_operands();

  const LinearRecipe& recipe() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace lowp::quant
