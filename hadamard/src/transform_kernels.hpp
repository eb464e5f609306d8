// Internal: the dense +-1 product y = H_m x across the m blocks of a Kronecker transform, and
// its per-ISA kernels.
//
// The m inputs are "rows" x_j (j < m) of `width` floats, x_j at x + j*ld; every output
// y_i = scale * sum_j H[i][j] x_j is formed lane by lane (lanes never mix), so a SIMD kernel
// computes exactly what the scalar one does on each lane.
//
// Method (the "four Russians" table trick): the inputs are cut into groups of g = 4
// consecutive rows; for each group all 16 signed sums +-x_j0 +- x_j0+1 +- x_j0+2 +- x_j0+3 are
// tabulated (14 additions and 8 negations), after which each output row is one table entry
// per group: m/4 additions instead of m - 1. Per element of output that is about
// (22 + m)/4 vector operations instead of m.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "lowp/numerics/cpu.hpp"

namespace lowp::hadamard::detail {

// Rows per group: 4 divides every order above 2, and 16-entry tables balance building
// (about 1.5 operations per entry) against accumulation (m/4 additions per output).
inline constexpr int kGroup = 4;
inline constexpr int kGroupSlots = 1 << kGroup;

// Floats of one table entry: the columns a SIMD kernel processes together (two AVX-512 or
// four AVX2 registers; one row offset then serves several additions). Blocks of 16 floats
// use a half-width variant, shorter ones the scalar kernel.
inline constexpr std::size_t kTileLanes = 32;

// Groups whose tables are live at once (24 KiB of kTileLanes-float entries): larger orders
// take several passes over the groups, carrying partial sums in a scratch row per output,
// so that the tables stay in the L1 cache. (Tuned on Zen 5: 8 to 15 are within 5%.)
inline constexpr int kPassGroups = 12;

struct SignPlan {
  int m = 0;       // order (a multiple of 4)
  int groups = 0;  // m / kGroup
  // Passes over the groups: pass q covers groups [pass_begin[q], pass_begin[q + 1]).
  std::vector<int> pass_begin;
  // offset[t * m + i] = 16 * pattern: the entry output row i takes from group t's table, with
  // bit b of the pattern set iff H[i][4t + b] = -1 (a kernel with W-float entries finds it
  // pattern * W floats into the group's 16 entries). A group's offsets for consecutive rows
  // are consecutive bytes.
  std::vector<std::uint8_t> offset;
  int passes() const { return static_cast<int>(pass_begin.size()) - 1; }
  // Floats a kernel's scratch must hold: one pass of tables plus the partial sums.
  std::size_t scratch_floats() const {
    return (static_cast<std::size_t>(kPassGroups) * kGroupSlots + m) * kTileLanes;
  }
};

// The plan for H_m (or H_m^T), built once and cached; m from supported_orders().
const SignPlan& sign_plan(int m, bool transposed);

// Applies the plan to columns [0, width); `scratch` holds scratch_floats() floats, 64-byte
// aligned.
using SignKernel = void (*)(const SignPlan& plan, float* x, std::size_t ld, std::size_t width,
                            float scale, float* scratch);

struct SignKernels {
  SignKernel wide;    // width a multiple of kTileLanes
  SignKernel narrow;  // width a multiple of kTileLanes / 2
  // x[i] with its sign bit xor-ed with bit 31 of mask[i], i < n (exact, also for NaN/Inf).
  void (*flip)(float* x, const std::uint32_t* mask, std::size_t n);
};

const SignKernels& sign_kernels_avx2() noexcept;
const SignKernels& sign_kernels_avx512() noexcept;
// Scalar flip, also the tail of the SIMD ones.
void flip_signs_scalar(float* x, const std::uint32_t* mask, std::size_t n);
// Any width (one lane at a time); the reference the SIMD kernels must match bitwise.
void sign_kernel_scalar(const SignPlan& plan, float* x, std::size_t ld, std::size_t width,
                        float scale, float* scratch);

// The Kronecker transform driver behind transform.hpp, with optional sign flips before
// (`pre`) and after (`post`) the transform: n masks of 0 or 0x80000000 xor-ed into the float
// bit patterns (for randomized rotations). `fn` names the caller in error messages.
void transform_rows(const char* fn, Isa isa, float* x, std::size_t rows, std::size_t n,
                    std::size_t stride, float scale, bool transposed, const std::uint32_t* pre,
                    const std::uint32_t* post);

}  // namespace lowp::hadamard::detail
