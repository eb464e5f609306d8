// InterleavedRows: the copy, the row decoder gemm_f32's packing reads, and the one-row GEMM's
// dot over the interleaved groups (gemv_f32_kernels.hpp's per-ISA kernels).
#include "lowp/quant/interleaved_rows.hpp"

#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "gemv_f32_kernels.hpp"
#include "lowp/numerics/error.hpp"
#include "transpose.hpp"

namespace lowp::quant {

// The copy's whole 2 MiB spans are in huge pages where the kernel gives them (transparent huge
// pages on request; its last partial span in small pages, so no memory is spent past its end): a
// decode step streams all of it, and 4 KiB pages cost a page fault each to make (most of a
// second for the 85M model's 440 MB) and a TLB miss each to read.
struct InterleavedRows::Data {
  static constexpr std::size_t kHuge = std::size_t{1} << 21, kSmall = 4096;
  std::size_t cols = 0;
  float* w = nullptr;  // whole groups of 64 rows (the last padded with zero rows)
  explicit Data(std::size_t floats) {
    const std::size_t bytes = (floats * sizeof(float) + kSmall - 1) / kSmall * kSmall;
    void* p = nullptr;  // posix_memalign: aligned_alloc wants a size that is a multiple of the alignment
    if (::posix_memalign(&p, kHuge, bytes) != 0)
      throw Error("interleaved rows: cannot allocate " + std::to_string(bytes) + " bytes");
    w = static_cast<float*>(p);
#ifdef MADV_HUGEPAGE
    if (bytes >= kHuge) ::madvise(w, bytes / kHuge * kHuge, MADV_HUGEPAGE);  // a hint: the copy is the same without
#endif
  }
  ~Data() { std::free(w); }
  Data(const Data&) = delete;
  Data& operator=(const Data&) = delete;
};

namespace {

using detail::kInterleave;

// Elements [k0, k0 + n) of the row whose slot (rows x cols floats, row-major) starts at `row`:
// its group's base and its lane follow from the slot's index.
void widen_interleaved(const void* ctx, const void* row, std::size_t k0, std::size_t n, float* out) {
  const auto& d = *static_cast<const InterleavedRows::Data*>(ctx);
  const auto l = static_cast<std::size_t>(static_cast<const float*>(row) - d.w) / d.cols;
  const float* g = d.w + l / kInterleave * kInterleave * d.cols + k0 * kInterleave;
  const std::size_t r = l % kInterleave;
  for (std::size_t i = 0; i < n; ++i) out[i] = g[i * kInterleave + r];
}

// rows[0] is the slot of a group's first row (the one-row GEMM's passes are whole groups).
template <detail::InterleavedDotFn Dot>
void dot_interleaved(const void*, const void* const* rows, std::size_t k0, std::size_t n, const float* x, float* acc) {
  Dot(x, static_cast<const float*>(rows[0]) + k0 * kInterleave, n, acc);
}

DotLanesFn dot_for(Isa isa) {
  switch (isa) {
    case Isa::avx512: return &dot_interleaved<detail::dot_interleaved_avx512>;
    case Isa::avx2: return &dot_interleaved<detail::dot_interleaved_avx2>;
    case Isa::scalar: break;
  }
  return &dot_interleaved<detail::dot_interleaved_scalar>;
}

}  // namespace

bool InterleavedRows::fits(const StoredMatrix& B) noexcept {
  return B.type == StoredType::f32 && !B.row_map && B.rows > 0 && B.cols > 0 && B.cols % 32 == 0 && B.data;
}

InterleavedRows::InterleavedRows(const StoredMatrix& B, int threads) {
  if (!fits(B))
    throw Error("interleaved rows: need float32 rows without a row map, columns a multiple of 32 (" +
                std::to_string(B.rows) + " x " + std::to_string(B.cols) + ")");
  const std::size_t cols = B.cols, groups = (B.rows + kInterleave - 1) / kInterleave;
  d_ = std::make_unique<Data>(groups * kInterleave * cols);
  d_->cols = cols;
  const auto* src = static_cast<const float*>(B.data);
  float* dst = d_->w;
  // Each group is a 64 x cols block transposed; the last one's missing rows are zeros.
  const std::size_t whole = B.rows / kInterleave;
#pragma omp parallel for schedule(static) num_threads(threads > 0 ? threads : omp_get_max_threads())
  for (std::size_t g = 0; g < whole; ++g)
    detail::transpose(src + g * kInterleave * cols, dst + g * kInterleave * cols, kInterleave, cols);
  if (whole < groups) {
    std::vector<float> block(kInterleave * cols, 0.0f);
    std::copy_n(src + whole * kInterleave * cols, (B.rows - whole * kInterleave) * cols, block.data());
    detail::transpose(block.data(), dst + whole * kInterleave * cols, kInterleave, cols);
  }
  m_.type = StoredType::custom;
  m_.data = d_->w;
  m_.rows = B.rows;
  m_.cols = cols;
  m_.row_bytes = cols * sizeof(float);
  m_.block = 1;
  m_.widen = &widen_interleaved;
  m_.ctx = d_.get();
  m_.dot_lanes = dot_for(best_isa());
}

InterleavedRows::~InterleavedRows() = default;

}  // namespace lowp::quant
