// The training quantizers a QuantSpec cannot express (linear.hpp, SpecialQuant): Quartet's
// QuEST forward, NVFP4 with the 4-over-6 block choice, and Quartet II's MS-EDEN, plus the
// random signs of a random Hadamard transform.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <string>

#include "../quantize/quantize_kernels.hpp"
#include "linear_operand.hpp"
#include "lowp/formats/bulk.hpp"
#include "lowp/formats/registry.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/numerics/parallel.hpp"
#include "lowp/numerics/rng.hpp"
#include "lowp/quant/scale_rules.hpp"

namespace lowp::quant::detail {
namespace {

const Format& e2m1() {
  static const Format f = parse_format("e2m1");
  return f;
}
const Format& ue4m3() {
  static const Format f = parse_format("ue4m3");
  return f;
}

void check_groups(const char* what, std::size_t cols, std::size_t group) {
  if (cols % group != 0)
    throw Error(std::string(what) + ": " + std::to_string(cols) + " columns are not a multiple of the group of " +
                std::to_string(group));
}

// y <- E2M1(y), round to nearest even, saturating at +-6.
void e2m1_rtn(std::span<float> y) {
  BulkOptions o;
  o.cast.saturate = true;
  fake_quant_f32(e2m1(), y, o);
}

// Largest power of two <= v (v > 0, finite), as a float.
float pow2_floor(float v) {
  int e = 0;
  std::frexp(v, &e);
  return exp2i(std::clamp(e - 1, -149, 127));
}

float tensor_amax(const float* x, std::size_t n) { return finite_amax(x, n); }

// The chunk the per-group quantizers work in (a multiple of their groups of 16 and 32; on the
// stack), and the size from which they run in parallel. The bits do not depend on either.
constexpr std::size_t kSpecialPiece = 4096, kSpecialParallelMin = std::size_t{1} << 16;

// body(a, len) on each kSpecialPiece-long chunk [a, a + len) of n elements, the chunks in
// parallel from kSpecialParallelMin elements on; returns the sum of what the calls return.
template <class Body>
std::size_t for_each_piece(std::size_t n, Body&& body) {
  const std::size_t chunks = (n + kSpecialPiece - 1) / kSpecialPiece;
  return parallel_count(chunks, team_size(n, kSpecialParallelMin), [&](std::size_t c) -> std::size_t {
    const std::size_t a = c * kSpecialPiece;
    return body(a, std::min(n, a + kSpecialPiece) - a);
  });
}

}  // namespace

void apply_random_signs(float* x, std::size_t rows, std::size_t cols, std::uint64_t seed) {
  const RngKey key = rng_key(seed ^ 0x5163a11e5ULL);
  std::vector<float> d(cols);
  for (std::size_t j = 0; j < cols; ++j) d[j] = (random_bits(key, j) >> 31) ? -1.0f : 1.0f;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < cols; ++j) x[r * cols + j] *= d[j];
}

constexpr float kQuestScale = 2.92247856f / 6.0f;

void quest_quantize(float* x, std::size_t rows, std::size_t cols, std::vector<std::uint8_t>* clip_mask) {
  check_groups("quest", cols, 32);
  if (clip_mask) clip_mask->resize(rows * cols);  // every element written below
  quest_quantize(x, rows, cols, clip_mask ? clip_mask->data() : nullptr);
}

void quest_quantize(float* x, std::size_t rows, std::size_t cols, std::uint8_t* mask) {
  constexpr std::size_t G = 32, kSets = 8;
  check_groups("quest", cols, G);
  const std::size_t n = rows * cols;
  // Chunks of groups, each scaled, cast (element-wise: in one call per chunk) and unscaled
  // while in cache; the chunks in parallel.
  for_each_piece(n, [&](std::size_t a, std::size_t len) -> std::size_t {
    float scale[kSpecialPiece / G];
    for (std::size_t g0 = 0; g0 < len / G; g0 += kSets) {
      // Each group's sums run in element order; kSets groups side by side keep 2 * kSets
      // independent addition chains in flight instead of two.
      const std::size_t sets = std::min(kSets, len / G - g0);
      float sum[kSets] = {}, sq[kSets] = {};
      const float* v0 = x + a + g0 * G;
      for (std::size_t i = 0; i < G; ++i)
        for (std::size_t k = 0; k < sets; ++k) {
          const float e = v0[k * G + i];
          sum[k] += e;
          sq[k] += e * e;
        }
      for (std::size_t k = 0; k < sets; ++k) {
        const float mean = sum[k] / G, msq = sq[k] / G, var = msq - mean * mean;
        const float sd = var >= 0 ? std::sqrt(var) : 1.0f;
        // Quartet's QuestMXFP4Quantizer (and QuTLASS's fused kernel): 2.92247856 / 6 * std, the
        // clipping point 6 * scale near the MSE-optimal 2.92 std of a Gaussian on the E2M1 grid.
        scale[g0 + k] = pow2_floor(kQuestScale * sd + 1e-8f);
      }
    }
    for (std::size_t g = 0; g < len / G; ++g) {
      float* v = x + a + g * G;
      // x / 2^e is x * 2^-e, both one rounding of the same value, 2^-e being a float here
      // (the scale is at least 2^-27 and at most 2^127).
      const float inv = 1.0f / scale[g];
      for (std::size_t i = 0; i < G; ++i) v[i] *= inv;
      if (mask) {
        // restrict: a byte store may alias anything, and would reload v and mask every element.
        std::uint8_t* __restrict m = mask + a + g * G;
        const float* __restrict w = v;
        for (std::size_t i = 0; i < G; ++i) m[i] = std::fabs(w[i]) < 6.0f;
      }
    }
    e2m1_rtn({x + a, len});
    for (std::size_t g = 0; g < len / G; ++g)
      for (std::size_t i = 0; i < G; ++i) x[a + g * G + i] *= scale[g];
    return 0;
  });
}

// The finite amax of each of the `groups` 16-blocks at v.
void block_amax16(const float* v, std::size_t groups, float* amax) {
  std::uint32_t bits[kSpecialPiece / 16];
  quant_kernels().group_max(v, groups * 16, 16, bits);
  std::memcpy(amax, bits, groups * sizeof(float));
}

// y <- UE4M3(y) to nearest even, saturating (one call for a chunk's block scales).
void ue4m3_rtn(std::span<float> y) {
  BulkOptions o;
  o.cast = CastOptions{Round::nearest_even, true, false};
  fake_quant_f32(ue4m3(), y, o);
}

void four_over_six_quantize(float* x, std::size_t rows, std::size_t cols, std::size_t* saturated) {
  constexpr std::size_t G = 16;
  check_groups("four_over_six", cols, G);
  const std::size_t n = rows * cols;
  const float amax = tensor_amax(x, n);
  // 256 instead of E4M3's 448 in the tensor scale: a block scaled to 4 needs a UE4M3 scale
  // 1.5x the one scaled to 6, which must stay representable (1.5 * 256 = 384 <= 448).
  const float ts = amax > 0 ? amax / (6.0f * 256.0f) : 1.0f;
  // Chunks of blocks: both candidates' scales and codes for the whole chunk, each in one bulk
  // call, then per block the one with the smaller squared error (ties keep 6).
  const std::size_t clipped = for_each_piece(n, [&](std::size_t a, std::size_t len) {
    std::size_t clipped_here = 0;
    const std::size_t groups = len / G;
    float bmax[kSpecialPiece / G], scale[2 * kSpecialPiece / G], q6[kSpecialPiece], q4[kSpecialPiece];
    block_amax16(x + a, groups, bmax);
    for (std::size_t g = 0; g < groups; ++g) {
      scale[g] = bmax[g] / (6.0f * ts);
      scale[groups + g] = bmax[g] / (4.0f * ts);
    }
    ue4m3_rtn({scale, 2 * groups});
    float* const m6 = scale;  // the scales become the multipliers ts * scale, in place
    float* const m4 = scale + groups;
    for (std::size_t i = 0; i < 2 * groups; ++i) scale[i] *= ts;
    for (std::size_t g = 0; g < groups; ++g) {
      for (std::size_t i = 0; i < G; ++i) {
        const float v = x[a + g * G + i];
        q6[g * G + i] = m6[g] > 0 ? v / m6[g] : 0.0f;
        q4[g * G + i] = m4[g] > 0 ? v / m4[g] : 0.0f;
      }
    }
    e2m1_rtn({q6, len});
    e2m1_rtn({q4, len});
    // Each block's squared errors in the order of its elements, the blocks side by side.
    double e6[kSpecialPiece / G] = {}, e4[kSpecialPiece / G] = {};
    for (std::size_t i = 0; i < G; ++i)
      for (std::size_t g = 0; g < groups; ++g) {
        const float v = x[a + g * G + i];
        const double d6 = static_cast<double>(q6[g * G + i] * m6[g]) - v;
        const double d4 = static_cast<double>(q4[g * G + i] * m4[g]) - v;
        e6[g] += d6 * d6;
        e4[g] += d4 * d4;
      }
    for (std::size_t g = 0; g < groups; ++g) {
      float* v = x + a + g * G;
      const bool four = e4[g] < e6[g] || (std::isnan(e6[g]) && !std::isnan(e4[g]));
      const float* q = four ? q4 + g * G : q6 + g * G;
      const float mult = four ? m4[g] : m6[g];
      for (std::size_t i = 0; i < G; ++i) {
        if (mult > 0 && std::fabs(v[i]) > 6.0f * mult) ++clipped_here;
        v[i] = q[i] * mult;
      }
    }
    return clipped_here;
  });
  if (saturated) *saturated += clipped;
}

void ms_eden_quantize(float* x, std::size_t rows, std::size_t cols, std::uint64_t seed, std::size_t* saturated,
                      float scale_override) {
  constexpr std::size_t G = 16;
  check_groups("ms_eden", cols, G);
  const std::size_t n = rows * cols;
  // Quartet II's eden_fp4_kernel (kernels/csrc/round_eden_fp4.cu), in float32: the tensor scale
  // maps the tensor amax onto a block scale of 255.99 (not E4M3's 448) with val_max = 6 /
  // override, so that a corrected scale (times <x,x>/<x,q>, which exceeds 1) is not clipped at
  // 448, which would bias that block.
  const float amax = tensor_amax(x, n);
  const float val_max = 6.0f / scale_override;
  const float ts = amax == 0 ? 1.0f : amax / 255.99f / val_max;
  const RngKey key = rng_key(seed);
  const CastOptions sr{Round::stochastic, true, false};
  // Chunks of blocks: the chunk's block scales and its codes each in one bulk call; block g's
  // stochastic rounding still draws random_bits(key, g).
  const std::size_t clipped = for_each_piece(n, [&](std::size_t a, std::size_t len) {
    std::size_t clipped_here = 0;
    const std::size_t groups = len / G;
    float scale[kSpecialPiece / G], factor[kSpecialPiece / G], q[kSpecialPiece];
    double xx[kSpecialPiece / G], xq[kSpecialPiece / G];
    block_amax16(x + a, groups, scale);
    for (std::size_t g = 0; g < groups; ++g) scale[g] = scale[g] / val_max / ts;
    ue4m3_rtn({scale, groups});
    for (std::size_t g = 0; g < groups; ++g) {
      if (scale[g] == 0) scale[g] = 1.0f;  // as the kernel: an underflowing block scale becomes 1
      factor[g] = 1.0f / (scale[g] * ts);
      for (std::size_t i = 0; i < G; ++i) {
        q[g * G + i] = x[a + g * G + i] * factor[g];
        if (std::fabs(q[g * G + i]) > 6.0f) ++clipped_here;
      }
    }
    // Each block's sums in the order of its elements; the blocks side by side (independent
    // chains) rather than one after the other.
    for (std::size_t g = 0; g < groups; ++g) xx[g] = 0, xq[g] = 0;
    for (std::size_t i = 0; i < G; ++i)
      for (std::size_t g = 0; g < groups; ++g) xx[g] += double(q[g * G + i]) * q[g * G + i];
    e2m1_rtn({q, len});
    for (std::size_t i = 0; i < G; ++i)
      for (std::size_t g = 0; g < groups; ++g) xq[g] += double(x[a + g * G + i] * factor[g]) * q[g * G + i];
    for (std::size_t g = 0; g < groups; ++g) {
      float* v = x + a + g * G;
      // EDEN's correction <x,x>/<x,q> (in the code domain, as the kernel) makes the block
      // unbiased over random rotations; folded into the block scale, then rounded stochastically.
      const double corr = xq[g] == 0 ? 1.0 : xx[g] / xq[g];
      const std::uint64_t block = a / G + g;
      const float s2 = static_cast<float>(
          decode(ue4m3(), encode(ue4m3(), double(scale[g]) * corr, sr, random_bits(key, block))));
      const float mult2 = ts * s2;
      for (std::size_t i = 0; i < G; ++i) v[i] = q[g * G + i] * mult2;
    }
    return clipped_here;
  });
  if (saturated) *saturated += clipped;
}

std::vector<float> block_sign_vector(BlockSigns signs, std::size_t block, std::uint64_t seed) {
  // TransformerEngine's hard-coded NVFP4 wgrad signs (get_wgrad_sign_vector in nvfp4_tensor.py).
  static constexpr float kTeSigns[16] = {1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1};
  std::vector<float> d(block, 1.0f);
  if (signs == BlockSigns::fixed) {
    if (block != 16) throw Error("fixed (TransformerEngine) signs need 16-blocks, not " + std::to_string(block));
    d.assign(kTeSigns, kTeSigns + 16);
  } else if (signs == BlockSigns::per_step) {
    const RngKey key = rng_key(seed);
    for (std::size_t j = 0; j < block; ++j) d[j] = (random_bits(key, j) >> 31) ? -1.0f : 1.0f;
  }
  return d;
}

void apply_block_signs(float* x, std::size_t rows, std::size_t cols, const std::vector<float>& d) {
  const std::size_t b = d.size();
  const float* dv = d.data();
  // Row by row, block by block: the multiplies by +-1 vectorise; the bits are those of
  // x[r][j] *= d[j mod b].
  parallel_for(rows, team_size(rows * cols, kSpecialParallelMin), [&](std::size_t r) {
    float* xr = x + r * cols;
    std::size_t j = 0;
    for (; j + b <= cols; j += b)
      for (std::size_t t = 0; t < b; ++t) xr[j + t] *= dv[t];
    for (std::size_t t = 0; j + t < cols; ++t) xr[j + t] *= dv[t];
  });
}

void quartet_sr_quantize(float* x, std::size_t rows, std::size_t cols, std::uint64_t seed, std::uint64_t first) {
  constexpr std::size_t G = 32;
  check_groups("quartet_sr", cols, G);
  const std::size_t n = rows * cols;
  // 2^e with e = floor(log2 amax) per group (the exponent field, as the kernels mask it); x / 2^e
  // is exact and in [-2, 2), so x * 3 / 2^e has one rounding (the kernels' x * (3 / 2^e)) and
  // the largest element lands in [3, 6). An all-zero group keeps p = 0 and stays zero.
  // Per chunk of groups, in parallel: element i still rounds with random_bits(rng_key(seed), i)
  // (BulkOptions::offset).
  for_each_piece(n, [&](std::size_t a, std::size_t len) -> std::size_t {
    float p[kSpecialPiece / G];
    std::uint32_t amax_bits[kSpecialPiece / G];  // finite amax per group, as finite_amax gives it
    quant_kernels().group_max(x + a, len, G, amax_bits);
    for (std::size_t g = 0; g < len / G; ++g) {
      float* v = x + a + g * G;
      float amax;
      std::memcpy(&amax, amax_bits + g, 4);
      p[g] = amax > 0 ? pow2_floor(amax) : 0.0f;
      // x / 2^e is x * 2^-e (both the one rounding of the same value) while 2^-e is a float:
      // for e >= -126.
      if (p[g] >= 0x1p-126f) {
        const float inv = 1.0f / p[g];
        for (std::size_t i = 0; i < G; ++i) v[i] = v[i] * inv * 3.0f;
      } else if (p[g] > 0) {
        for (std::size_t i = 0; i < G; ++i) v[i] = v[i] / p[g] * 3.0f;
      }
    }
    BulkOptions o;
    o.cast = CastOptions{Round::stochastic, true, false};
    o.seed = seed;
    o.offset = first + a;
    fake_quant_f32(e2m1(), {x + a, len}, o);
    for (std::size_t g = 0; g < len / G; ++g)
      if (p[g] > 0)
        for (std::size_t i = 0; i < G; ++i) x[a + g * G + i] = x[a + g * G + i] * p[g] / 3.0f;
    return 0;
  });
}

void quartet_sr_quantize_columns(float* x, std::size_t rows, std::size_t cols, std::uint64_t seed,
                                 std::size_t total_rows, std::size_t row0) {
  constexpr std::size_t G = 32;
  check_groups("quartet_sr", rows, G);
  // The arithmetic of quartet_sr_quantize, element for element, with a column's 32 rows as the
  // group: the maxima and the per-column multiplies run along the rows (SIMD kernels; a factor
  // of 1 stands for "untouched"), and each row is cast in one call whose random-bit indices
  // step by total_rows down L's rows.
  const QuantKernels& k = quant_kernels();
  std::vector<std::uint32_t> amax(cols);
  std::vector<float> p(cols), inv(cols), three(cols), back(cols), third(cols);
  for (std::size_t g = 0; g < rows; g += G) {
    float* band = x + g * cols;
    std::fill(amax.begin(), amax.end(), 0u);
    for (std::size_t r = 0; r < G; ++r) k.max_into(band + r * cols, cols, amax.data());
    bool tiny = false;
    for (std::size_t c = 0; c < cols; ++c) {
      float a;
      std::memcpy(&a, &amax[c], 4);
      p[c] = a > 0 ? pow2_floor(a) : 0.0f;
      const bool normal = p[c] >= 0x1p-126f;
      tiny |= p[c] > 0 && !normal;
      inv[c] = normal ? 1.0f / p[c] : 1.0f;
      three[c] = normal ? 3.0f : 1.0f;
      back[c] = p[c] > 0 ? p[c] : 1.0f;
      third[c] = p[c] > 0 ? 3.0f : 1.0f;
    }
    for (std::size_t r = 0; r < G; ++r) {
      float* v = band + r * cols;
      k.scale_each(v, v, cols, inv.data(), true);  // v * (1 / p) * 3
      k.scale_each(v, v, cols, three.data(), true);
      if (tiny)
        for (std::size_t c = 0; c < cols; ++c)
          if (p[c] > 0 && p[c] < 0x1p-126f) v[c] = v[c] / p[c] * 3.0f;
      BulkOptions o;
      o.cast = CastOptions{Round::stochastic, true, false};
      o.seed = seed;
      o.offset = row0 + g + r;
      o.stride = total_rows;
      fake_quant_f32(e2m1(), {v, cols}, o);
      k.scale_each(v, v, cols, back.data(), true);  // v * p / 3
      k.scale_each(v, v, cols, third.data(), false);
    }
  }
}

}  // namespace lowp::quant::detail
