// A weight quantized to a format of at most 4 bits, kept in its packed form: two codes per
// byte and one float32 dequantization factor per group, row by row. gemm_f32 reads it as a
// StoredMatrix with dequantize()'s bits, so a one-row product (a decode step) reads about an
// eighth of the float32 weight's bytes and gives the same results.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "lowp/quant/gemm.hpp"
#include "lowp/quant/quantize.hpp"

namespace lowp::quant {

class PackedWeight {
 public:
  // The packed form of q, whose dequantized values are `values` (dequantize(q), rows x cols),
  // or nullopt where it has none: elements wider than 4 bits, groups not whole runs of 16
  // elements along the rows (cols too), or any value the packed form does not give bitwise.
  static std::optional<PackedWeight> pack(const QuantizedTensor& q, const float* values);
  // The rows of each part in turn (q, k and v fused into one GEMM); nullopt unless every part
  // has the same columns and element values.
  static std::optional<PackedWeight> concat(std::span<const PackedWeight* const> parts);

  const StoredMatrix& matrix() const noexcept { return m_; }  // valid while this lives
  std::size_t bytes() const noexcept;                         // codes and factors

  struct Data;  // the rows and the decoding table, shared by copies

 private:
  explicit PackedWeight(std::shared_ptr<const Data> d);
  std::shared_ptr<const Data> d_;
  StoredMatrix m_;
};

}  // namespace lowp::quant
