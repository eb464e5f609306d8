// FWHT: input checks, the scalar reference, and the dispatch to the per-ISA kernels with
// cache blocking for long vectors and OpenMP over rows or blocks.
#include "lowp/hadamard/fwht.hpp"

#include <algorithm>
#include <bit>
#include <memory>
#include <new>
#include <string>

#include "fwht_kernels.hpp"
#include "parallel.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/numerics/half_runs.hpp"

namespace lowp::hadamard {
namespace {

void check(const char* fn, std::size_t n, std::size_t stride) {
  if (!std::has_single_bit(n) || n > (std::size_t{1} << 30))
    throw Error(std::string(fn) + ": n = " + std::to_string(n) +
                " is not a power of two in [1, 2^30]");
  if (stride < n)
    throw Error(std::string(fn) + ": row stride " + std::to_string(stride) +
                " is shorter than the row length n = " + std::to_string(n));
}

// --- scalar kernels ------------------------------------------------------------------------

void scalar_rows(const float* in, float* x, std::size_t rows, std::size_t n, std::size_t stride, float scale) {
  for (std::size_t r = 0; r < rows; ++r) {
    if (in != x) std::copy(in + r * stride, in + r * stride + n, x + r * stride);
    reference::fwht(x + r * stride, n, scale);
  }
}

void scalar_cols(const float* in, float* x, std::size_t m, std::size_t stride, std::size_t width, float scale) {
  if (in != x)
    for (std::size_t i = 0; i < m; ++i) std::copy(in + i * stride, in + i * stride + width, x + i * stride);
  for (std::size_t h = 1; h < m; h *= 2)
    for (std::size_t i = 0; i < m; i += 2 * h)
      for (std::size_t j = i; j < i + h; ++j) {
        float* a = x + j * stride;
        float* b = a + h * stride;
        for (std::size_t c = 0; c < width; ++c) {
          const float u = a[c], v = b[c];
          a[c] = u + v;
          b[c] = u - v;
        }
      }
  if (scale != 1.0f)
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t c = 0; c < width; ++c) x[i * stride + c] *= scale;
}

const detail::Kernels kScalar{1, scalar_rows, scalar_cols};

const detail::Kernels& kernels_for(Isa isa) {
  if (!isa_available(isa))
    throw Error("fwht: this CPU cannot run the " + std::string(isa_name(isa)) + " kernels");
  switch (isa) {
    case Isa::avx512: return detail::kernels_avx512();
    case Isa::avx2: return detail::kernels_avx2();
    case Isa::scalar: break;
  }
  return kScalar;
}

// --- drivers -------------------------------------------------------------------------------

// Column transforms run on strips of about this many bytes, which stay in L2 while all their
// stages run (the power-of-two row stride maps a strip onto few L1 sets, so L1 cannot hold it).
constexpr std::size_t kStripBytes = std::size_t{1} << 18;
// Longest column done in one go; longer ones are split in two nested column transforms.
constexpr std::size_t kMaxColumn = 256;

using detail::split_ranges;
using detail::want_threads;

// Column transform of length m down every column of an m x stride matrix (width == stride):
// in strips of kStripBytes, or for long columns as two nested column transforms (the low
// stages within groups of kMaxColumn consecutive rows, then the high ones), which keeps the
// stage order of the reference.
void columns(const detail::Kernels& k, float* x, std::size_t m, std::size_t stride,
             float scale, bool parallel) {
  if (m <= kMaxColumn) {
    const std::size_t w = std::clamp<std::size_t>(std::bit_floor(kStripBytes / (m * sizeof(float))),
                                                  std::max<std::size_t>(k.min_n, 16), stride);
    split_ranges(stride / w, parallel, [&](std::size_t lo, std::size_t hi) {
      for (std::size_t s = lo; s < hi; ++s) k.cols(x + s * w, x + s * w, m, stride, w, scale);
    });
    return;
  }
  const std::size_t m1 = kMaxColumn;
  split_ranges(m / m1, parallel, [&](std::size_t lo, std::size_t hi) {
    for (std::size_t g = lo; g < hi; ++g) columns(k, x + g * m1 * stride, m1, stride, 1.0f, false);
  });
  columns(k, x, m / m1, stride * m1, scale, parallel);
}

// One vector longer than a block: the low stages blockwise, then the high ones as columns.
void transform_long(const detail::Kernels& k, float* x, std::size_t n, float scale,
                    bool parallel) {
  const std::size_t b = detail::kBlock, blocks = n / b;
  split_ranges(blocks, parallel, [&](std::size_t lo, std::size_t hi) {
    k.rows(x + lo * b, x + lo * b, hi - lo, b, b, 1.0f);
  });
  columns(k, x, blocks, b, scale, parallel);
}

// Rows of x <- their transforms of the rows of `in` (x itself, or a source laid out like x).
void run(const detail::Kernels& k, const float* in, float* x, std::size_t rows, std::size_t n, std::size_t stride,
         float scale) {
  if (rows == 0) return;
  const bool parallel = want_threads(rows * n);
  if (n < k.min_n || n <= detail::kBlock) {
    const detail::Kernels& kk = n < k.min_n ? kScalar : k;
    split_ranges(rows, parallel, [&](std::size_t lo, std::size_t hi) {
      kk.rows(in + lo * stride, x + lo * stride, hi - lo, n, stride, scale);
    });
    return;
  }
  for (std::size_t r = 0; r < rows; ++r) {
    if (in != x) std::copy(in + r * stride, in + r * stride + n, x + r * stride);  // long rows: copied first
    transform_long(k, x + r * stride, n, scale, parallel);
  }
}

void run(const detail::Kernels& k, float* x, std::size_t rows, std::size_t n, std::size_t stride, float scale) {
  run(k, x, x, rows, n, stride, scale);
}

constexpr std::align_val_t kAlign{64};
struct AlignedDelete {
  void operator()(float* p) const { ::operator delete[](p, kAlign); }
};

// Storage variants: each thread widens a row into its own float buffer, transforms it and
// narrows it back (one rounding).
void run_storage(const char* fn, std::uint16_t* x, std::size_t rows, std::size_t n,
                 std::size_t stride, float scale, bool bf16) {
  check(fn, n, stride);
  if (rows == 0) return;
  const detail::Kernels& k = kernels_for(best_isa());
  const HalfRuns& h = half_runs();
  const auto widen = bf16 ? h.bf16_to_f32 : h.f16_to_f32;
  const auto narrow = bf16 ? h.f32_to_bf16 : h.f32_to_f16;
  const bool long_rows = n > detail::kBlock;
  const bool parallel = want_threads(rows * n);
  auto body = [&](std::size_t lo, std::size_t hi) {
    std::unique_ptr<float[], AlignedDelete> buf(new (kAlign) float[n]);
    for (std::size_t r = lo; r < hi; ++r) {
      std::uint16_t* row = x + r * stride;
      widen(row, buf.get(), n);
      // Long rows parallelise inside the transform instead.
      run(k, buf.get(), 1, n, n, scale);
      narrow(buf.get(), row, n);
    }
  };
  if (long_rows) {
    body(0, rows);
  } else {
    split_ranges(rows, parallel, body);
  }
}

}  // namespace

namespace reference {
void fwht(float* x, std::size_t n, float scale) {
  for (std::size_t h = 1; h < n; h *= 2)
    for (std::size_t i = 0; i < n; i += 2 * h)
      for (std::size_t j = i; j < i + h; ++j) {
        const float a = x[j], b = x[j + h];
        x[j] = a + b;
        x[j + h] = a - b;
      }
  if (scale != 1.0f)
    for (std::size_t i = 0; i < n; ++i) x[i] *= scale;
}
}  // namespace reference

void fwht(float* x, std::size_t n, float scale) {
  check("fwht", n, n);
  run(kernels_for(best_isa()), x, 1, n, n, scale);
}

void fwht_rows(float* x, std::size_t rows, std::size_t n, std::size_t stride, float scale) {
  check("fwht_rows", n, stride);
  run(kernels_for(best_isa()), x, rows, n, stride, scale);
}

void fwht_rows_from(const float* src, float* dst, std::size_t rows, std::size_t n, std::size_t stride, float scale) {
  check("fwht_rows_from", n, stride);
  if (rows > 0 && (src == nullptr || dst == nullptr)) throw Error("fwht_rows_from: null data pointer");
  run(kernels_for(best_isa()), src, dst, rows, n, stride, scale);
}

void fwht_columns(const float* src, float* dst, std::size_t m, std::size_t cols, std::size_t stride, float scale) {
  check("fwht_columns", m, m);
  if (stride < cols)
    throw Error("fwht_columns: row stride " + std::to_string(stride) + " is shorter than the " +
                std::to_string(cols) + " columns");
  if (cols == 0) return;
  if (src == nullptr || dst == nullptr) throw Error("fwht_columns: null data pointer");
  const detail::Kernels& k = kernels_for(best_isa());
  const std::size_t simd = k.min_n > 1 ? cols - cols % k.min_n : 0;
  const std::size_t strip = std::max<std::size_t>(std::bit_floor(kStripBytes / (m * sizeof(float))), k.min_n);
  for (std::size_t c = 0; c < simd; c += strip) k.cols(src + c, dst + c, m, stride, std::min(strip, simd - c), scale);
  if (simd < cols) kScalar.cols(src + simd, dst + simd, m, stride, cols - simd, scale);
}

void fwht_rows_isa(Isa isa, float* x, std::size_t rows, std::size_t n, std::size_t stride,
                   float scale) {
  check("fwht_rows_isa", n, stride);
  run(kernels_for(isa), x, rows, n, stride, scale);
}

void fwht_rows_bf16(std::uint16_t* x, std::size_t rows, std::size_t n, std::size_t stride,
                    float scale) {
  run_storage("fwht_rows_bf16", x, rows, n, stride, scale, true);
}

void fwht_rows_f16(std::uint16_t* x, std::size_t rows, std::size_t n, std::size_t stride,
                   float scale) {
  run_storage("fwht_rows_f16", x, rows, n, stride, scale, false);
}

}  // namespace lowp::hadamard
