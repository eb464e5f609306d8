// Internal to the linear layer: turning a float32 matrix into a GEMM operand as a recipe asks
// (transpose, rotate, quantize), and the float32 GEMM on such operands.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "../gemm/transpose.hpp"
#include "lowp/hadamard/rotation.hpp"
#include "lowp/numerics/uninit_vector.hpp"
#include "lowp/quant/delayed_scaling.hpp"
#include "lowp/quant/linear.hpp"
#include "lowp/quant/quantize.hpp"

namespace lowp::quant::detail {

// Scratch written in full after each resize: the operands change size from GEMM to GEMM, and
// a std::vector zero-filled each growth, every step.
using ScratchFloats = UninitVector<float>;

// A GEMM operand L (rows x cols, reduction along cols). `data` holds L row-major, or, when
// `transposed`, L^T row-major (cols x rows): quantizing in the source's own layout saves a
// transpose whenever the granularity allows it (tensor, tile, row <-> column).
struct Operand {
  const float* data = nullptr;
  bool transposed = false;
  ScratchFloats own;  // backing store when the data were copied
};

struct OperandPlan {
  const std::optional<QuantSpec>* spec = nullptr;
  hadamard::Rotation rotation;       // kind/block/seed; size is filled in here
  std::uint64_t seed = 0;            // stochastic rounding stream of this operand
  DelayedScaling* delayed = nullptr; // per-tensor scale from this history (then records amax)
  BlockSigns signs = BlockSigns::none;  // with a block_diagonal rotation
  std::uint64_t signs_seed = 0;         // per_index and per_step signs
  SpecialQuant special = SpecialQuant::none;
  std::vector<std::uint8_t>* clip_mask = nullptr;  // quest: 1 where the element was not clipped
  OperandStats* stats = nullptr;     // adds what quantizing did, when set
  std::string what;                  // "linear 'fp8-block128' fwd W" for error messages
};

// L = transpose ? src^T : src, where src is src_rows x src_cols row-major.
void prepare_operand(const float* src, std::size_t src_rows, std::size_t src_cols, bool transpose,
                     const OperandPlan& plan, Operand& out);

// C (M x N) = A B^T (+= when accumulate) with A logically M x K and B logically N x K, in
// float32 through gemm_f32's kernels on all OpenMP threads, bitwise the same at any thread
// count (and the same bits as gemm_f32 on the operands laid out plainly).
void gemm_operands(const Operand& A, const Operand& B, float* C, std::size_t M, std::size_t N,
                   std::size_t K, bool accumulate);

// The special quantizers of linear.hpp, in place on a row-major rows x cols matrix whose
// groups run along the columns. Throw lowp::Error when cols is not a multiple of the group.
void quest_quantize(float* x, std::size_t rows, std::size_t cols, std::vector<std::uint8_t>* clip_mask);
// The same with the mask (rows * cols bytes) given, or null.
void quest_quantize(float* x, std::size_t rows, std::size_t cols, std::uint8_t* clip_mask);
// `saturated` (when set) counts the elements above 6 times their block's scale.
void four_over_six_quantize(float* x, std::size_t rows, std::size_t cols, std::size_t* saturated = nullptr);
// Quartet II's backward scale override (quartet2/linear.py: (17 / 16) * 0.93, as a float32).
inline const float kQuartet2BackwardOverride = static_cast<float>((17.0 / 16.0) * 0.93);
// MS-EDEN as Quartet II's eden_fp4 kernel computes it, per 16-group: tensor scale amax / 255.99 /
// (6 / override); block scale E4M3(group amax / (6 / override) / tensor scale), 1 if that is 0;
// codes E2M1(x * (1 / (scale * tensor scale))); the scale times <x,x>/<x,q> (code domain, sums
// in double where the kernel sums in float32) rounded stochastically to E4M3 with the bits of
// the group's index; values code * (tensor scale * corrected scale).
void ms_eden_quantize(float* x, std::size_t rows, std::size_t cols, std::uint64_t seed,
                      std::size_t* saturated = nullptr, float scale_override = kQuartet2BackwardOverride);
// Quartet's backward quantizer (SpecialQuant::quartet_sr): element i of the matrix rounds with
// random_bits(rng_key(seed), first + i) (first: the index of x[0] in the whole matrix).
void quartet_sr_quantize(float* x, std::size_t rows, std::size_t cols, std::uint64_t seed, std::uint64_t first = 0);
// quartet_sr_quantize of L = S^T done on S in place: x holds rows [row0, row0 + rows) of S
// (total_rows x cols, row-major), rows a multiple of 32, and L's groups are 32 rows of one column
// here; element (r, c) rounds with random_bits(rng_key(seed), c * total_rows + row0 + r).
void quartet_sr_quantize_columns(float* x, std::size_t rows, std::size_t cols, std::uint64_t seed,
                                 std::size_t total_rows, std::size_t row0);

// x[r][j] *= d_j for all rows, d_j = -1 when bit 31 of random_bits(rng_key(seed), j) is set.
void apply_random_signs(float* x, std::size_t rows, std::size_t cols, std::uint64_t seed);
// The block-length sign vector of `fixed` (TransformerEngine's) or `per_step` signs (d_j = -1
// when bit 31 of random_bits(rng_key(seed), j) is set, j < block).
std::vector<float> block_sign_vector(BlockSigns signs, std::size_t block, std::uint64_t seed);
// x[r][j] *= d[j mod d.size()].
void apply_block_signs(float* x, std::size_t rows, std::size_t cols, const std::vector<float>& d);

// A 64-bit mix of the step seed with an operand's own salt (splitmix64 finaliser).
std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b) noexcept;

}  // namespace lowp::quant::detail
