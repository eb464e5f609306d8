// InterleavedRows: the copy, the row decoder gemm_f32's packing reads, and the one-row GEMM's
// dot over the interleaved groups (gemv_f32_kernels.hpp's per-ISA kernels).
#include "lowp/quant/interleaved_rows.hpp"

#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "gemv_f32_kernels.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/numerics/half.hpp"
#include "transpose.hpp"

namespace lowp::quant {

// The copy's whole 2 MiB spans are in huge pages where the kernel gives them (transparent huge
// pages on request; its last partial span in small pages, so no memory is spent past its end): a
// decode step streams all of it, and 4 KiB pages cost a page fault each to make (most of a
// second for the 85M model's 440 MB) and a TLB miss each to read.
struct InterleavedRows::Data {
  static constexpr std::size_t kHuge = std::size_t{1} << 21, kSmall = 4096;
  inline static std::atomic<std::uint64_t> copies{0};
  const std::uint64_t id = ++copies;  // this copy among all made (a row cache's key: an address can be reused)
  std::size_t cols = 0, row_bytes = 0;
  void* mem = nullptr;  // whole groups (the last padded with zero rows)
  StoredMatrix src;     // block-coded: the source's decoder (its data is not read again)
  explicit Data(std::size_t size) {
    const std::size_t bytes = (size + kSmall - 1) / kSmall * kSmall;
    if (::posix_memalign(&mem, kHuge, bytes) != 0)  // posix_memalign: aligned_alloc wants a size that is a multiple of the alignment
      throw Error("interleaved rows: cannot allocate " + std::to_string(bytes) + " bytes");
#ifdef MADV_HUGEPAGE
    if (bytes >= kHuge) ::madvise(mem, bytes / kHuge * kHuge, MADV_HUGEPAGE);  // a hint: the copy is the same without
#endif
  }
  ~Data() { std::free(mem); }
  Data(const Data&) = delete;
  Data& operator=(const Data&) = delete;
  const float* floats() const { return static_cast<const float*>(mem); }
  const std::uint8_t* bytes() const { return static_cast<const std::uint8_t*>(mem); }
};

namespace {

using detail::kInterleave;

// Elements [k0, k0 + n) of the row whose slot (rows x cols elements of type T, row-major)
// starts at `row`, each widened exactly: its group's base and its lane follow from the slot's
// index.
template <StoredType T>
void widen_interleaved(const void* ctx, const void* row, std::size_t k0, std::size_t n, float* out) {
  using E = std::conditional_t<T == StoredType::f32, float, std::uint16_t>;
  const auto& d = *static_cast<const InterleavedRows::Data*>(ctx);
  const auto* w = static_cast<const E*>(d.mem);
  const auto l = static_cast<std::size_t>(static_cast<const E*>(row) - w) / d.cols;
  const E* g = w + l / kInterleave * kInterleave * d.cols + k0 * kInterleave;
  const std::size_t r = l % kInterleave;
  for (std::size_t i = 0; i < n; ++i) {
    const E e = g[i * kInterleave + r];
    if constexpr (T == StoredType::f32)
      out[i] = e;
    else
      out[i] = T == StoredType::bf16 ? bf16_to_f32(e) : f16_to_f32(e);
  }
}

// A block-coded row: the bytes of its blocks that hold [k0, k0 + n) (of blocks one after another,
// StoredMatrix::block_bytes; else the whole row), gathered from its group into the row's own
// layout, then the source's decoder.
void widen_interleaved_bytes(const void* ctx, const void* row, std::size_t k0, std::size_t n, float* out) {
  const auto& d = *static_cast<const InterleavedRows::Data*>(ctx);
  const StoredMatrix& s = d.src;
  const auto l = static_cast<std::size_t>(static_cast<const std::uint8_t*>(row) - d.bytes()) / d.row_bytes;
  const bool even = s.block_bytes != 0;
  const std::size_t b0 = even ? k0 / s.block * s.block_bytes : 0,
                    b1 = even ? std::min(d.row_bytes, (k0 + n + s.block - 1) / s.block * s.block_bytes) : d.row_bytes;
  // The GEMM's packing widens a sliver's rows one after another over the same columns: their
  // group's bytes there are transposed back once, for its 16 rows (measured: a byte gather per
  // row made a 64-row window of Q8_0 1.6x slower than on the rows in place).
  struct Rows {
    std::uint64_t id = 0;
    std::size_t group = 0, b0 = 0, b1 = 0;
    std::vector<std::uint8_t> bytes;  // 16 rows of row_bytes
  };
  static thread_local Rows c;
  const std::size_t group = l / kByteInterleave;
  if (c.id != d.id || c.group != group || c.b0 != b0 || c.b1 != b1) {
    c.bytes.resize(kByteInterleave * d.row_bytes);
    const std::uint8_t* g = d.bytes() + group * kByteInterleave * d.row_bytes;
    const std::size_t word = s.interleave_word;
    if (word == 1)
      detail::transpose_bytes(g + b0 * kByteInterleave, kByteInterleave, c.bytes.data() + b0, d.row_bytes, b1 - b0,
                              kByteInterleave);
    else  // b0 and b1 are block starts or the row's end, so whole words (fits())
      for (std::size_t r = 0; r < kByteInterleave; ++r)
        for (std::size_t b = b0; b < b1; b += word)
          std::memcpy(c.bytes.data() + r * d.row_bytes + b, g + b * kByteInterleave + r * word, word);
    c.id = d.id;
    c.group = group;
    c.b0 = b0;
    c.b1 = b1;
  }
  s.widen(s.ctx, c.bytes.data() + l % kByteInterleave * d.row_bytes, k0, n, out);
}

// rows[0] is the slot of a group's first row (the one-row GEMM's passes are whole groups).
template <detail::InterleavedDotFn Dot>
void dot_interleaved(const void*, const void* const* rows, std::size_t k0, std::size_t n, const float* x, float* acc) {
  Dot(x, static_cast<const float*>(rows[0]) + k0 * kInterleave, n, acc);
}

template <detail::Interleaved16DotFn Dot>
void dot_interleaved16(const void*, const void* const* rows, std::size_t k0, std::size_t n, const float* x,
                       float* acc) {
  Dot(x, static_cast<const std::uint16_t*>(rows[0]) + k0 * kInterleave, n, acc);
}

template <StoredType T>
DotLanesFn dot16_for(Isa isa) {
  switch (isa) {
    case Isa::avx512: return &dot_interleaved16<detail::dot_interleaved16_avx512<T>>;
    case Isa::avx2: return &dot_interleaved16<detail::dot_interleaved16_avx2<T>>;
    case Isa::scalar: break;
  }
  return &dot_interleaved16<detail::dot_interleaved16_scalar<T>>;
}

// The source's interleaved dot, with its own decoder context.
void dot_interleaved_bytes(const void* ctx, const void* const* rows, std::size_t k0, std::size_t n, const float* x,
                           float* acc) {
  const StoredMatrix& s = static_cast<const InterleavedRows::Data*>(ctx)->src;
  s.dot_interleaved(s.ctx, rows, k0, n, x, acc);
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
  const bool shape = !B.row_map && B.rows > 0 && B.cols > 0 && B.cols % 32 == 0 && B.data;
  const bool coded = B.type == StoredType::custom && B.dot_interleaved && B.widen && B.row_bytes > 0 &&
                     B.block > 0 && B.cols % B.block == 0 &&
                     B.block_bytes * (B.cols / B.block) <= B.row_bytes &&
                     (B.interleave_word == 1 || (B.interleave_word == 4 && B.row_bytes % 4 == 0 && B.block_bytes % 4 == 0));
  return shape && (B.type != StoredType::custom || coded);
}

InterleavedRows::InterleavedRows(const StoredMatrix& B, int threads) {
  if (!fits(B))
    throw Error("interleaved rows: need float32, f16 or bf16 rows, or block-coded ones with an interleaved dot "
                "(blocks of whole words), without a row map, columns a multiple of 32 (" + std::to_string(B.rows) + " x " +
                std::to_string(B.cols) + ")");
  const bool coded = B.type == StoredType::custom;
  // Each group is a rows x elements block transposed, elements of esize bytes (a block-coded
  // row's words); the last group's missing rows are zeros.
  const std::size_t esize = coded ? B.interleave_word : B.type == StoredType::f32 ? 4 : 2;
  const std::size_t rows = coded ? kByteInterleave : kInterleave, row_bytes = coded ? B.row_bytes : B.cols * esize;
  const std::size_t groups = (B.rows + rows - 1) / rows, size = rows * row_bytes, elems = row_bytes / esize;
  d_ = std::make_unique<Data>(groups * size);
  d_->cols = B.cols;
  d_->row_bytes = row_bytes;
  const auto* src = static_cast<const std::uint8_t*>(B.data);
  auto* dst = static_cast<std::uint8_t*>(d_->mem);
  const auto relay = [&](const std::uint8_t* from, std::uint8_t* to) {
    if (!coded && esize == 4)
      detail::transpose(reinterpret_cast<const float*>(from), reinterpret_cast<float*>(to), rows, B.cols);
    else if (esize > 1)  // a mapped source's elements need not be aligned: copied bytewise
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t e = 0; e < elems; ++e)
          std::memcpy(to + esize * (e * rows + r), from + esize * (r * elems + e), esize);
    else
      detail::transpose_bytes(from, row_bytes, to, rows, rows, row_bytes);
  };
  const std::size_t whole = B.rows / rows;
#pragma omp parallel for schedule(static) num_threads(threads > 0 ? threads : omp_get_max_threads())
  for (std::size_t g = 0; g < whole; ++g) relay(src + g * size, dst + g * size);
  if (whole < groups) {
    // Aligned as the copy's groups are (transpose and the 16-bit loop read it by element).
    std::vector<float> block((size + 3) / 4, 0.0f);
    auto* b = reinterpret_cast<std::uint8_t*>(block.data());
    std::copy_n(src + whole * size, (B.rows - whole * rows) * row_bytes, b);
    relay(b, dst + whole * size);
  }
  m_.type = StoredType::custom;
  m_.data = d_->mem;
  m_.rows = B.rows;
  m_.cols = B.cols;
  m_.row_bytes = row_bytes;
  m_.ctx = d_.get();
  m_.block = 1;
  if (!coded) {
    m_.prefetch_rows = false;  // one stream (gemm.hpp)
    m_.grouped_rows = kInterleave;  // windows pack its slivers as they lie (gemm_f32's pack_grouped)
    m_.grouped_type = B.type;
  }
  switch (B.type) {
    case StoredType::f32:
      m_.widen = &widen_interleaved<StoredType::f32>;
      m_.dot_lanes = dot_for(best_isa());
      break;
    case StoredType::f16:
      m_.widen = &widen_interleaved<StoredType::f16>;
      m_.dot_lanes = dot16_for<StoredType::f16>(best_isa());
      break;
    case StoredType::bf16:
      m_.widen = &widen_interleaved<StoredType::bf16>;
      m_.dot_lanes = dot16_for<StoredType::bf16>(best_isa());
      break;
    case StoredType::custom:
      d_->src = B;
      d_->src.data = nullptr;
      m_.block = B.block;
      m_.widen = &widen_interleaved_bytes;
      m_.dot_lanes = &dot_interleaved_bytes;
      m_.dot_columns = B.dot_columns;
      break;
  }
}

InterleavedRows::~InterleavedRows() = default;

}  // namespace lowp::quant
