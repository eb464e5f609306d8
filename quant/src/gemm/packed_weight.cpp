// PackedWeight (lowp/quant/packed_weight.hpp): rows of group factors and packed codes, checked
// against dequantize()'s values once, when packed; the scalar row decoder.
#include "lowp/quant/packed_weight.hpp"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "../quantize/quantize_detail.hpp"
#include "lowp/formats/bulk.hpp"
#include "lowp/formats/codec.hpp"
#include "packed_weight_kernels.hpp"

namespace lowp::quant {

struct PackedWeight::Data {
  detail::PackedRows layout;
  detail::PackedWidenFn widen = nullptr;
  detail::PackedDotFn dot = nullptr;  // the one-row GEMV's decode and dot, where the ISA has one
  detail::PackedDotFn dot_interleaved = nullptr;  // the same over an interleaved copy
  std::size_t rows = 0, cols = 0;
  std::vector<std::uint8_t> bytes;  // rows x layout.row_bytes
};

namespace {

void widen_packed(const void* ctx, const void* row, std::size_t k0, std::size_t n, float* out) {
  const auto& d = *static_cast<const PackedWeight::Data*>(ctx);
  d.widen(d.layout, static_cast<const std::uint8_t*>(row), k0, n, out);
}

void dot_packed(const void* ctx, const void* const* rows, std::size_t k0, std::size_t n, const float* x, float* acc) {
  const auto& d = *static_cast<const PackedWeight::Data*>(ctx);
  d.dot(d.layout, rows, k0, n, x, acc);
}

void dot_packed_interleaved(const void* ctx, const void* const* rows, std::size_t k0, std::size_t n, const float* x,
                            float* acc) {
  const auto& d = *static_cast<const PackedWeight::Data*>(ctx);
  d.dot_interleaved(d.layout, rows, k0, n, x, acc);
}

bool same_layout(const detail::PackedRows& a, const detail::PackedRows& b) {
  return std::memcmp(a.table, b.table, sizeof a.table) == 0 && a.group == b.group && a.groups == b.groups &&
         a.divide == b.divide;
}

}  // namespace

PackedWeight::PackedWeight(std::shared_ptr<const Data> d) : d_(std::move(d)) {
  m_ = StoredMatrix{StoredType::custom, d_->bytes.data(), d_->rows, d_->cols};
  m_.row_bytes = d_->layout.row_bytes;
  m_.block = 16;
  m_.widen = &widen_packed;
  m_.ctx = d_.get();
  if (d_->dot && d_->cols % 32 == 0) m_.dot_lanes = &dot_packed;
  if (d_->dot_interleaved && d_->cols % 32 == 0) m_.dot_interleaved = &dot_packed_interleaved;
}

std::size_t PackedWeight::bytes() const noexcept { return d_->bytes.size(); }

std::optional<PackedWeight> PackedWeight::pack(const QuantizedTensor& q, const float* values) {
  const Format& f = q.spec.format;
  const std::size_t rows = q.rows, cols = q.cols;
  if (!values || storage_bits(f) != 4 || rows == 0 || cols % 16 != 0 || cols == 0 ||
      q.codes.size() < encoded_bytes(f, rows * cols))
    return std::nullopt;
  const detail::DequantOps ops = detail::dequant_ops(q);
  const std::size_t group = ops.d.empty() ? cols : ops.cw;
  if (group % 16 != 0 || cols % group != 0) return std::nullopt;
  auto d = std::make_shared<Data>();
  d->rows = rows;
  d->cols = cols;
  d->widen = detail::packed_widen_kernel(best_isa());
  d->dot = detail::packed_dot_kernel(best_isa());
  d->dot_interleaved = detail::packed_dot_interleaved_kernel(best_isa());
  detail::PackedRows& L = d->layout;
  for (std::uint32_t c = 0; c < 16; ++c) L.table[c] = c <= f.code_mask() ? static_cast<float>(decode(f, c)) : 0.0f;
  L.group = group;
  L.groups = cols / group;
  L.divide = !ops.d.empty() && !ops.mul;
  L.row_bytes = 4 * L.groups + cols / 2;
  d->bytes.resize(rows * L.row_bytes);
  std::vector<float> widened(cols);
  for (std::size_t r = 0; r < rows; ++r) {
    std::uint8_t* row = d->bytes.data() + r * L.row_bytes;
    for (std::size_t g = 0; g < L.groups; ++g) {
      const float v = ops.d.empty() ? 1.0f : ops.d[(r / ops.rh) * ops.ngc + g];
      std::memcpy(row + 4 * g, &v, 4);
    }
    std::memcpy(row + 4 * L.groups, q.codes.data() + r * cols / 2, cols / 2);
    // The factors above are dequantize()'s, but its arithmetic is the reference: any value
    // this form does not give bitwise (a NaN's payload, say) leaves the weight unpacked.
    d->widen(L, row, 0, cols, widened.data());
    if (std::memcmp(widened.data(), values + r * cols, cols * sizeof(float)) != 0) return std::nullopt;
  }
  return PackedWeight(std::move(d));
}

std::optional<PackedWeight> PackedWeight::concat(std::span<const PackedWeight* const> parts) {
  if (parts.empty()) return std::nullopt;
  const Data& first = *parts[0]->d_;
  auto d = std::make_shared<Data>();
  d->layout = first.layout;
  d->widen = first.widen;
  d->dot = first.dot;
  d->dot_interleaved = first.dot_interleaved;
  d->cols = first.cols;
  for (const PackedWeight* p : parts) {
    if (p->d_->cols != first.cols || !same_layout(p->d_->layout, first.layout)) return std::nullopt;
    d->rows += p->d_->rows;
    d->bytes.insert(d->bytes.end(), p->d_->bytes.begin(), p->d_->bytes.end());
  }
  return PackedWeight(std::move(d));
}

namespace detail {

void packed_widen_scalar(const PackedRows& p, const std::uint8_t* row, std::size_t k0, std::size_t n, float* out) {
  const std::uint8_t* codes = row + 4 * p.groups;
  for (std::size_t k = k0; k < k0 + n;) {
    const std::size_t g = k / p.group, end = std::min(k0 + n, (g + 1) * p.group);
    float f;
    std::memcpy(&f, row + 4 * g, 4);
    for (; k < end; ++k) {
      const unsigned c = (codes[k / 2] >> (4 * (k % 2))) & 15u;
      out[k - k0] = p.divide ? p.table[c] / f : p.table[c] * f;
    }
  }
}

const PackedRows& packed_rows(const StoredMatrix& m) { return static_cast<const PackedWeight::Data*>(m.ctx)->layout; }

PackedWidenFn packed_widen_kernel(Isa isa) {
  return isa == Isa::scalar ? &packed_widen_scalar : &packed_widen_avx2;  // AVX-512 CPUs run AVX2
}

PackedDotFn packed_dot_kernel(Isa isa) {
  switch (isa) {
    case Isa::avx512: return &packed_dot_avx512;
    case Isa::avx2: return &packed_dot_avx2;
    case Isa::scalar: break;
  }
  return nullptr;
}

PackedDotFn packed_dot_interleaved_kernel(Isa isa) {
  switch (isa) {
    case Isa::avx512: return &packed_dot_interleaved_avx512;
    case Isa::avx2: return &packed_dot_interleaved_avx2;
    case Isa::scalar: break;
  }
  return nullptr;
}

}  // namespace detail
}  // namespace lowp::quant
