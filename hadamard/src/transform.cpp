// Kronecker (H_m (x) H_2^k) and block-diagonal Hadamard transforms: checks, the choice of m,
// the +-1 product plans, and the row/thread drivers on top of the FWHT kernels.
#include "lowp/hadamard/transform.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <utility>

#include "lowp/hadamard/fwht.hpp"
#include "lowp/hadamard/matrix.hpp"
#include "lowp/numerics/error.hpp"
#include "parallel.hpp"
#include "transform_kernels.hpp"
#include "transform_simd.hpp"

namespace lowp::hadamard {
namespace detail {
namespace {

SignPlan make_plan(int m, bool transposed) {
  const std::span<const std::int8_t> h = hadamard_matrix(m);
  SignPlan p;
  p.m = m;
  p.groups = m / kGroup;
  const int passes = (p.groups + kPassGroups - 1) / kPassGroups;
  for (int q = 0; q <= passes; ++q) p.pass_begin.push_back(p.groups * q / passes);  // even split
  p.offset.resize(static_cast<std::size_t>(m) * p.groups);
  for (int t = 0; t < p.groups; ++t)
    for (int i = 0; i < m; ++i) {
      int pattern = 0;
      for (int b = 0; b < kGroup; ++b) {
        const int j = kGroup * t + b;
        const std::int8_t e = transposed ? h[static_cast<std::size_t>(j) * m + i]
                                         : h[static_cast<std::size_t>(i) * m + j];
        if (e < 0) pattern |= 1 << b;
      }
      p.offset[static_cast<std::size_t>(t) * m + i] = static_cast<std::uint8_t>(pattern * 16);
    }
  return p;
}

}  // namespace

const SignPlan& sign_plan(int m, bool transposed) {
  static std::mutex mu;
  static std::map<std::pair<int, bool>, std::unique_ptr<const SignPlan>> cache;
  std::lock_guard lock(mu);
  auto& slot = cache[{m, transposed}];
  if (!slot) slot = std::make_unique<const SignPlan>(make_plan(m, transposed));
  return *slot;
}

void flip_signs_scalar(float* x, const std::uint32_t* mask, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t u;
    std::memcpy(&u, x + i, sizeof u);
    u ^= mask[i];
    std::memcpy(x + i, &u, sizeof u);
  }
}

void sign_kernel_scalar(const SignPlan& plan, float* x, std::size_t ld, std::size_t width,
                        float scale, float* scratch) {
  SignSimd<Lane, 1>::run(plan, x, ld, width, scale, scratch);
}

}  // namespace detail

namespace {

void check_rows(const char* fn, std::size_t n, std::size_t stride) {
  if (n == 0) throw Error(std::string(fn) + ": length n = 0");
  if (stride < n)
    throw Error(std::string(fn) + ": row stride " + std::to_string(stride) +
                " is shorter than the row length n = " + std::to_string(n));
}

std::size_t order_or_throw(const char* fn, std::size_t n) {
  const std::size_t m = kronecker_order(n);
  if (m != 0) return m;
  const std::size_t b = largest_power_of_two_block(n);
  std::string msg = std::string(fn) + ": no Hadamard transform of length n = " + std::to_string(n) +
                    " (n = m * 2^k needs a Hadamard matrix of order m = " + std::to_string(n / b) +
                    " * 2^j, which lowp cannot build)";
  if (b > 1)
    msg += "; block-diagonal Hadamard with block " + std::to_string(b) +
           " (the largest power of two dividing n) is available";
  else
    msg += " and n is odd, so there is no block-diagonal alternative either";
  throw Error(msg);
}

const detail::SignKernels& sign_kernels_for(const char* fn, Isa isa) {
  if (!isa_available(isa))
    throw Error(std::string(fn) + ": this CPU cannot run the " + std::string(isa_name(isa)) +
                " kernels");
  switch (isa) {
    case Isa::avx512:
      return detail::sign_kernels_avx512();
    case Isa::avx2:
      return detail::sign_kernels_avx2();
    case Isa::scalar:
      break;
  }
  static const detail::SignKernels scalar{detail::sign_kernel_scalar, detail::sign_kernel_scalar,
                                          detail::flip_signs_scalar};
  return scalar;
}

// A per-thread 64-byte aligned scratch buffer for the +-1 sum tables.
float* table_buffer(std::size_t floats) {
  struct AlignedDelete {
    void operator()(float* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };
  struct Buffer {
    std::unique_ptr<float[], AlignedDelete> p;
    std::size_t size = 0;
  };
  thread_local Buffer buf;
  if (buf.size < floats) {
    buf.p.reset(new (std::align_val_t{64}) float[floats]);
    buf.size = floats;
  }
  return buf.p.get();
}

using detail::split_ranges;
using detail::want_threads;


// Rows per chunk for power-of-two lengths with signs: about kChunkBytes, so that the sign
// flips, the FWHT and the flips after it run on data still in cache.
constexpr std::size_t kChunkBytes = std::size_t{1} << 17;

}  // namespace

namespace detail {

void transform_rows(const char* fn, Isa isa, float* x, std::size_t rows, std::size_t n,
                    std::size_t stride, float scale, bool transposed, const std::uint32_t* pre,
                    const std::uint32_t* post) {
  check_rows(fn, n, stride);
  const std::size_t m = order_or_throw(fn, n);
  const detail::SignKernels& kernels = sign_kernels_for(fn, isa);
  if (rows == 0) return;
  if (x == nullptr)
    throw Error(std::string(fn) + ": null data pointer for " + std::to_string(rows) + " rows");
  const bool parallel = want_threads(rows * n);
  if (m == 1) {
    if (!pre && !post) {
      fwht_rows_isa(isa, x, rows, n, stride, scale);
      return;
    }
    const std::size_t chunk = std::max<std::size_t>(1, kChunkBytes / (n * sizeof(float)));
    split_ranges(rows, parallel, [&](std::size_t lo, std::size_t hi) {
      for (std::size_t r0 = lo; r0 < hi; r0 += chunk) {
        const std::size_t r1 = std::min(hi, r0 + chunk);
        if (pre)
          for (std::size_t r = r0; r < r1; ++r) kernels.flip(x + r * stride, pre, n);
        fwht_rows_isa(isa, x + r0 * stride, r1 - r0, n, stride, scale);
        if (post)
          for (std::size_t r = r0; r < r1; ++r) kernels.flip(x + r * stride, post, n);
      }
    });
    return;
  }
  const std::size_t k = n / m;  // block length 2^k
  const detail::SignPlan& plan = detail::sign_plan(static_cast<int>(m), transposed);
  const std::size_t table_floats = plan.scratch_floats();
  const detail::SignKernel kernel = k >= detail::kTileLanes       ? kernels.wide
                                    : k >= detail::kTileLanes / 2 ? kernels.narrow
                                                                  : detail::sign_kernel_scalar;
  // Columns [c0, c1) of one row's m x k block matrix; c0, c1 multiples of kTileLanes or k.
  auto dense = [&](float* row, std::size_t c0, std::size_t c1) {
    kernel(plan, row + c0, k, c1 - c0, scale, table_buffer(table_floats));
  };
  if (rows == 1 && parallel && k >= detail::kTileLanes) {
    // One long vector: the FWHT parallelises itself, the dense pass splits the columns.
    if (pre) kernels.flip(x, pre, n);
    fwht_rows_isa(isa, x, m, k, k, 1.0f);
    split_ranges(k / detail::kTileLanes, true, [&](std::size_t lo, std::size_t hi) {
      dense(x, lo * detail::kTileLanes, hi * detail::kTileLanes);
    });
    if (post) kernels.flip(x, post, n);
    return;
  }
  // Each row while it is in cache: signs, the block FWHTs, the dense pass, signs.
  split_ranges(rows, parallel, [&](std::size_t lo, std::size_t hi) {
    for (std::size_t r = lo; r < hi; ++r) {
      float* row = x + r * stride;
      if (pre) kernels.flip(row, pre, n);
      fwht_rows_isa(isa, row, m, k, k, 1.0f);
      dense(row, 0, k);
      if (post) kernels.flip(row, post, n);
    }
  });
}

}  // namespace detail

namespace {

void run(const char* fn, Isa isa, float* x, std::size_t rows, std::size_t n, std::size_t stride,
         float scale, bool transposed) {
  detail::transform_rows(fn, isa, x, rows, n, stride, scale, transposed, nullptr, nullptr);
}

}  // namespace

std::size_t kronecker_order(std::size_t n) {
  if (n == 0) return 0;
  if (std::has_single_bit(n)) return 1;
  const std::span<const int> orders = supported_orders();
  for (auto it = orders.rbegin(); it != orders.rend(); ++it) {
    const auto m = static_cast<std::size_t>(*it);
    if (n % m == 0 && std::has_single_bit(n / m)) return m;
  }
  return 0;
}

std::size_t largest_power_of_two_block(std::size_t n) { return n & (~n + 1); }

void hadamard_transform_rows(float* x, std::size_t rows, std::size_t n, std::size_t stride,
                             float scale, bool transposed) {
  run("hadamard_transform_rows", best_isa(), x, rows, n, stride, scale, transposed);
}

void hadamard_transform(float* x, std::size_t n, float scale, bool transposed) {
  run("hadamard_transform", best_isa(), x, 1, n, n, scale, transposed);
}

void hadamard_transform_rows_isa(Isa isa, float* x, std::size_t rows, std::size_t n,
                                 std::size_t stride, float scale, bool transposed) {
  run("hadamard_transform_rows_isa", isa, x, rows, n, stride, scale, transposed);
}

void block_hadamard_rows(float* x, std::size_t rows, std::size_t n, std::size_t stride,
                         std::size_t b, float scale) {
  check_rows("block_hadamard_rows", n, stride);
  if (b == 0 || !std::has_single_bit(b) || n % b != 0)
    throw Error("block_hadamard_rows: block b = " + std::to_string(b) +
                " is not a power of two dividing n = " + std::to_string(n));
  if (rows == 0) return;
  if (stride == n || rows == 1) {
    fwht_rows(x, rows * (n / b), b, b, scale);  // the rows' blocks are one row-major matrix
    return;
  }
  const bool parallel = want_threads(rows * n);
  split_ranges(rows, parallel, [&](std::size_t lo, std::size_t hi) {
    for (std::size_t r = lo; r < hi; ++r) fwht_rows(x + r * stride, n / b, b, b, scale);
  });
}

}  // namespace lowp::hadamard
