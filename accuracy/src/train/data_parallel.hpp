// Data-parallel training steps (private): the fixed-order sum of micro-batch gradients across
// the ranks of an MPI run, and the emulated low-precision gradient communication.
//
// A step's micro-batches are numbered globally and dealt to the ranks contiguously
// (dist::share). chain_sum() adds terms in global order: rank r receives the running sum of
// ranks 0..r-1, adds its own terms one by one and passes it on; the last rank broadcasts.
// With one term per micro-batch that is ((g0 + g1) + g2) + ... whatever the rank count, so a
// run on N ranks gives the bits of the single-process run with the same micro-batches.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "dist/comm.hpp"
#include "train/train_model.hpp"

namespace lowp::accuracy::train {

// The seed (stochastic rounding, random rotations) of micro-batch k of a step whose seed is
// `step_seed`: a function of the step and k alone, never of the rank; k = 0 keeps the step's
// seed, so a step of one micro-batch is the step without micro-batches.
std::uint64_t micro_batch_seed(std::uint64_t step_seed, std::size_t k);

// The forward and backward passes of a rank's micro-batches of one step.
struct MicroBatches {
  std::size_t batch = 0, micro = 0, window = 0;  // B windows a step, m a micro-batch, T tokens each
  dist::Range range;       // the micro-batches this rank runs (global indices)
  bool keep_apart = false; // each gradient its own term (fp32 communication on ranks after the first)
  bool stats = false;      // the linears' operand statistics, per micro-batch
  int threads = 1;
};
struct LocalStep {
  // Terms for chain_sum: one per micro-batch (keep_apart) or this rank's running sum, the
  // parameters' gradients back to back in TrainModel::params() order.
  std::vector<std::vector<float>> grads;
  // Per micro-batch: loss * m / B, two zeros (room for the communication error), then per
  // linear and operand (TrainModel::take_stats order) count, saturated, flushed, signal, noise.
  std::vector<std::vector<double>> sums;
};
// `tokens` and `targets` hold the whole batch (B x T). Each micro-batch starts from zeroed
// gradients and divides its loss gradient by B * T, so the terms add up to the batch's
// gradient. `nonfinite` is called (and must throw) when a micro-batch's loss is not finite.
LocalStep run_micro_batches(TrainModel& net, std::span<const int> tokens, std::span<const int> targets,
                            const MicroBatches& mb, std::uint64_t step_seed,
                            const std::function<void(const std::string& tensor)>& nonfinite);
// The parameters' gradients back to back, and back.
std::vector<float> flat_grad(TrainModel& net);
void set_grad(TrainModel& net, std::span<const float> grad);

// How each rank's gradient (the sum of its micro-batches) travels to the reduction.
enum class GradComm { fp32, bf16, e4m3, e5m2, mxfp8 };
// Throws lowp::Error listing the names.
GradComm parse_grad_comm(const std::string& name);
const char* grad_comm_name(GradComm c);

// What quantizing a gradient for communication did: sum g^2 and sum (g - q)^2.
struct CommError {
  double signal = 0, noise = 0;
};
// Fake-quantizes `grad` (the parameters' gradients back to back, `sizes` each) in place as
// `c` sends it, each tensor with its own scaling: per-tensor amax for e4m3/e5m2, E8M0 scales
// per block of 32 for mxfp8, a plain cast for bf16. fp32: nothing. (lowp's own emulation of
// an FP8 gradient reduction; torchao's float8 all-gather casts weights, not gradients.)
CommError quantize_for_comm(GradComm c, std::span<float> grad, std::span<const std::size_t> sizes);

// The sum of every rank's `terms` (each of length n) in rank order, each rank's in its
// order: every rank returns the same bits. `distributed` false: this process alone. Rank 0
// must hold at least one term; other ranks may hold none.
std::vector<float> chain_sum(const std::vector<std::vector<float>>& terms, std::size_t n, bool distributed);
std::vector<double> chain_sum(const std::vector<std::vector<double>>& terms, std::size_t n, bool distributed);
// The elementwise maximum over ranks (a NaN wins): amax histories.
std::vector<float> max_over_ranks(std::vector<float> values, bool distributed);

}  // namespace lowp::accuracy::train
