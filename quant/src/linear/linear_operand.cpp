// GEMM operands for the linear layer: transpose / rotate / quantize as the recipe says, and
// the float32 GEMM over operands stored either way round.
#include "linear_operand.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "../gemm/gemm_f32_kernels.hpp"
#include "../quantize/quantize_detail.hpp"
#include "lowp/formats/bulk.hpp"
#include "lowp/formats/codec.hpp"
#include "lowp/hadamard/fwht.hpp"

#include "lowp/numerics/error.hpp"
#include "lowp/numerics/parallel.hpp"

namespace lowp::quant::detail {
namespace {

// The spec that quantizes src (natural layout) exactly as `s` quantizes src^T, or nullopt
// when no granularity does (1-D blocks run along the other dimension).
std::optional<QuantSpec> transposed_spec(const QuantSpec& s) {
  QuantSpec t = s;
  switch (s.granularity) {
    case Granularity::tensor:
    case Granularity::tile: return t;  // square tiles: the same groups either way round
    case Granularity::row: t.granularity = Granularity::column; return t;
    case Granularity::column: t.granularity = Granularity::row; return t;
    case Granularity::block: return std::nullopt;
  }
  return std::nullopt;
}

// Element i of codes packed as lowp/formats/bulk.hpp stores them.
std::uint32_t code_at(const std::vector<std::uint8_t>& codes, int bits, std::size_t i) {
  switch (bits) {
    case 4: return (codes[i / 2] >> (4 * (i % 2))) & 0xfu;
    case 6: {
      // A trailing partial group may be stored in fewer than 3 bytes.
      const std::size_t g = 3 * (i / 4);
      const auto byte = [&](std::size_t k) -> std::uint32_t { return k < codes.size() ? codes[k] : 0u; };
      const std::uint32_t w = byte(g) | (byte(g + 1) << 8) | (byte(g + 2) << 16);
      return (w >> (6 * (i % 4))) & 0x3fu;
    }
    case 8: return codes[i];
    case 16: {
      std::uint16_t c;
      std::memcpy(&c, codes.data() + 2 * i, 2);
      return c;
    }
    default: {
      std::uint32_t c;
      std::memcpy(&c, codes.data() + 4 * i, 4);
      return c;
    }
  }
}

// x <- the fake-quantized `from` (which may be x itself); with `count`, through the codes,
// returning how many elements were clipped (their code is the format's largest magnitude and
// the input exceeds it).
std::size_t quantize_into(const OperandPlan& plan, const QuantSpec& spec, const float* from, float* x,
                          std::size_t rows, std::size_t cols, bool count) {
  QuantSpec s = spec;
  s.seed = plan.seed;
  const std::size_t n = rows * cols;
  if (!count && !plan.delayed) return fake_quant(s, from, x, rows, cols), 0;
  if (from != x) std::copy(from, from + n, x);
  if (!count) return fake_quant_delayed(s, x, rows, cols, *plan.delayed), 0;
  const std::vector<float> pre(x, x + n);
  const QuantizedTensor q =
      plan.delayed ? quantize_delayed(s, pre.data(), rows, cols, *plan.delayed) : quantize(s, pre.data(), rows, cols);
  dequantize(q, x);
  const int bits = storage_bits(s.format);
  const double top = s.format.max_finite();
  std::size_t sat = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (std::fabs(pre[i]) > std::fabs(x[i]) && std::fabs(decode(s.format, code_at(q.codes, bits, i))) == top) ++sat;
  return sat;
}

// Rotate-then-quantize in one pass (Quartet's operands): each L2-sized piece is read from src
// by the transform's first pass (or copied, when signs come first), rotated, signed and
// quantized while in cache, the pieces in parallel. In the source's layout when L = src^T (the
// rotation and the groups then run down src's columns), else piece by piece of L's rows. The
// bits of the step-by-step path: every stage acts on rows (or, transposed, on bands of
// columns) alone, and quartet_sr's random bits are indexed by L's flat positions either way.
bool fuses_rotation(const OperandPlan& plan, const hadamard::Rotation& rot, bool transpose_it,
                    std::size_t src_rows, std::size_t src_cols) {
  const bool signs = plan.signs == BlockSigns::none || plan.signs == BlockSigns::fixed ||
                     plan.signs == BlockSigns::per_step;
  const bool special = plan.special == SpecialQuant::quartet_sr ||
                       (plan.special == SpecialQuant::quest && !transpose_it);
  // Shapes the quantizers refuse take the step-by-step path, which throws (not in a parallel loop).
  const std::size_t groups_along = transpose_it ? src_rows : src_cols;
  return rot.kind == hadamard::RotationKind::block_diagonal && signs && special && !plan.stats &&
         !plan.delayed && groups_along % std::max<std::size_t>(rot.block, 32) == 0;
}

void rotate_and_quantize(const float* src, std::size_t src_rows, std::size_t src_cols, bool transpose_it,
                         const OperandPlan& plan, const hadamard::Rotation& rot, float* x) {
  const std::size_t b = rot.block;
  const float scale = hadamard::orthonormal_scale(b);
  const std::vector<float> before = plan.signs == BlockSigns::fixed ? block_sign_vector(plan.signs, b, 0)
                                                                    : std::vector<float>();
  const std::vector<float> after = plan.signs == BlockSigns::per_step
                                       ? block_sign_vector(plan.signs, b, plan.signs_seed)
                                       : std::vector<float>();
  std::uint8_t* mask = nullptr;
  if (plan.special == SpecialQuant::quest && plan.clip_mask) {
    plan.clip_mask->resize(src_rows * src_cols);  // every element written below
    mask = plan.clip_mask->data();
  }
  // Pieces: bands of src rows that hold whole groups (transposed), else about 64 KiB of L's rows.
  const std::size_t band = transpose_it ? std::max<std::size_t>(b, 32)
                                        : std::max<std::size_t>(1, (std::size_t{1} << 14) / src_cols);
  const std::size_t pieces = (src_rows + band - 1) / band;
  const auto run = [&](std::size_t piece) {
    const std::size_t r0 = piece * band, rows = std::min(band, src_rows - r0), n = rows * src_cols;
    float* v = x + r0 * src_cols;
    // The transform's first pass reads src (no copy) unless signs come first.
    const float* u = src + r0 * src_cols;
    if (!before.empty()) {
      std::copy(u, u + n, v);
      u = v;
    }
    if (transpose_it) {
      // L's row position j is src row r0 + r: the signs scale rows, the transforms run down columns.
      const auto sign_rows = [&](const std::vector<float>& d) {
        for (std::size_t r = 0; r < rows; ++r)
          for (std::size_t c = 0; c < src_cols; ++c) v[r * src_cols + c] *= d[(r0 + r) % b];
      };
      if (!before.empty()) sign_rows(before);
      for (std::size_t r = 0; r < rows; r += b)
        hadamard::fwht_columns(u + r * src_cols, v + r * src_cols, b, src_cols, src_cols, scale);
      if (!after.empty()) sign_rows(after);
      quartet_sr_quantize_columns(v, rows, src_cols, plan.seed, src_rows, r0);
      return;
    }
    if (!before.empty()) apply_block_signs(v, rows, src_cols, before);
    hadamard::fwht_rows_from(u, v, n / b, b, b, scale);
    if (!after.empty()) apply_block_signs(v, rows, src_cols, after);
    if (plan.special == SpecialQuant::quest)
      quest_quantize(v, rows, src_cols, mask ? mask + r0 * src_cols : nullptr);
    else
      quartet_sr_quantize(v, rows, src_cols, plan.seed, r0 * src_cols);
  };
  FirstError failure;
  parallel_for(pieces, pieces > 1 ? team_size(src_rows * src_cols, std::size_t{1} << 15) : 1,
               [&](std::size_t i) { failure.run([&] { run(i); }); });
  failure.rethrow();
}

}  // namespace

std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b) noexcept {
  std::uint64_t z = a ^ (b * 0x9e3779b97f4a7c15ULL) ^ 0x632be59bd9b4e019ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void prepare_operand(const float* src, std::size_t src_rows, std::size_t src_cols, bool transpose_it,
                     const OperandPlan& plan, Operand& out) {
  const std::size_t rows = transpose_it ? src_cols : src_rows;
  const std::size_t cols = transpose_it ? src_rows : src_cols;
  const std::optional<QuantSpec>& spec = *plan.spec;
  hadamard::Rotation rot = plan.rotation;
  rot.size = cols;
  const bool rotate = rot.kind != hadamard::RotationKind::none || plan.signs != BlockSigns::none ||
                      plan.special != SpecialQuant::none;  // all act along L's rows
  const std::size_t n = rows * cols;
  try {
    if (rot.kind != hadamard::RotationKind::none) rot.validate();
    if (spec) check_shape(*spec, rows, cols);
    if (!spec && !rotate) {
      out.own.clear();
      out.data = src;
      out.transposed = transpose_it;
      return;
    }
    std::optional<QuantSpec> natural = spec;
    if (transpose_it && spec && !rotate) natural = transposed_spec(*spec);
    // 1-D blocks along L's rows are columns of src: quantized there, no transpose (the same
    // bits; not with stochastic rounding, whose random bits follow L's flat positions).
    const bool down_columns =
        transpose_it && spec && !rotate && !natural && !plan.stats && !plan.delayed && column_blocks_fit(*spec);
    out.own.resize(n);  // every element written below (no zero fill when the size is kept)
    float* x = out.own.data();
    if (fuses_rotation(plan, rot, transpose_it, src_rows, src_cols)) {
      rotate_and_quantize(src, src_rows, src_cols, transpose_it, plan, rot, x);
      out.transposed = transpose_it;
      out.data = x;
      return;
    }
    const float* from = x;  // what the quantizer reads
    if (transpose_it && (rotate || !natural) && !down_columns) {
      // Materialise L: the rotation and 1-D blocks act along L's rows.
      transpose(src, x, src_rows, src_cols);
      out.transposed = false;
      natural = spec;
    } else {
      // Quantized straight from src when nothing else acts on the copy first.
      if (rotate || plan.stats)
        std::copy(src, src + n, x);
      else
        from = src;
      out.transposed = transpose_it;
    }
    if (plan.signs == BlockSigns::per_index) apply_random_signs(x, rows, cols, plan.signs_seed);
    if (plan.signs == BlockSigns::fixed) apply_block_signs(x, rows, cols, block_sign_vector(plan.signs, rot.block, 0));
    if (rot.kind != hadamard::RotationKind::none) rot.apply(x, rows, cols);
    if (plan.signs == BlockSigns::per_step)
      apply_block_signs(x, rows, cols, block_sign_vector(plan.signs, rot.block, plan.signs_seed));
    std::vector<float> pre;
    if (plan.stats && (natural || plan.special != SpecialQuant::none)) pre.assign(x, x + n);
    std::size_t sat = 0;
    if (plan.special == SpecialQuant::quest) {
      std::vector<std::uint8_t> local;
      std::vector<std::uint8_t>* mask = plan.clip_mask ? plan.clip_mask : plan.stats ? &local : nullptr;
      quest_quantize(x, rows, cols, mask);
      if (mask) sat = static_cast<std::size_t>(std::count(mask->begin(), mask->end(), 0));
    } else if (plan.special == SpecialQuant::four_over_six) {
      four_over_six_quantize(x, rows, cols, &sat);
    } else if (plan.special == SpecialQuant::ms_eden) {
      ms_eden_quantize(x, rows, cols, plan.seed, &sat);
    } else if (plan.special == SpecialQuant::quartet_sr) {
      quartet_sr_quantize(x, rows, cols, plan.seed);  // the largest of a group lands below 6
    } else if (down_columns) {
      QuantSpec s = *spec;
      s.seed = plan.seed;
      fake_quant_column_blocks(s, from, x, src_rows, src_cols);
    } else if (natural) {
      const std::size_t r = out.transposed ? cols : rows, c = out.transposed ? rows : cols;
      sat = quantize_into(plan, *natural, from, x, r, c, plan.stats != nullptr);
    }
    if (!pre.empty()) {
      OperandStats& st = *plan.stats;
      st.count += n;
      st.saturated += sat;
      for (std::size_t i = 0; i < n; ++i) {
        const double d = static_cast<double>(pre[i]) - x[i];
        st.signal += static_cast<double>(pre[i]) * pre[i];
        st.noise += d * d;
        st.flushed += pre[i] != 0.0f && x[i] == 0.0f;
      }
    }
    out.data = x;
  } catch (const Error& e) {
    throw Error(plan.what + " (" + std::to_string(rows) + "x" + std::to_string(cols) + "): " + e.what());
  }
}

void gemm_operands(const Operand& A, const Operand& B, float* C, std::size_t M, std::size_t N,
                   std::size_t K, bool accumulate) {
  // Stored shapes: A is M x K (or K x M when transposed), B is N x K (or K x N).
  GemmF32Args g;
  g.a = A.data;
  g.a_rs = A.transposed ? 1 : K;
  g.a_cs = A.transposed ? M : 1;
  if (B.transposed)
    g.b_t = B.data;
  else
    g.b = {StoredType::f32, B.data, N, K};
  g.c = C;
  g.M = M;
  g.N = N;
  g.K = K;
  g.accumulate = accumulate;
  // At least 2^18 multiply-adds per thread; the bits do not depend on the count.
  std::size_t work = 0;
  if (__builtin_mul_overflow(M * N, K, &work)) work = SIZE_MAX;
  const int threads = static_cast<int>(std::clamp<std::size_t>(work >> 18, 1, static_cast<std::size_t>(omp_get_max_threads())));
  gemm_f32_run(g, gemm_f32_kernel(best_isa()), threads);
}

}  // namespace lowp::quant::detail
