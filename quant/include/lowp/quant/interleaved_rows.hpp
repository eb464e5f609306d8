// A float32 matrix re-laid for the one-row GEMM: its rows 64 at a time, element k of row r of
// a group at [k * 64 + r]. A decode step's product then reads one stream of whole cache lines,
// where rows side by side in their own layout make 16 streams per thread, which the hardware
// prefetcher follows at about two thirds of the bandwidth one stream gets (bench_decode). gemm_f32
// reads it as a StoredMatrix with the same bits as the rows it came from, so it serves windows too.
#pragma once
#include <cstddef>
#include <memory>

#include "lowp/quant/gemm.hpp"

namespace lowp::quant {

class InterleavedRows {
 public:
  // B: StoredType::f32 without a row map, rows > 0, cols a multiple of 32 (lowp::Error
  // otherwise). The copy is made on `threads` OpenMP threads (0: all); B is not read again.
  explicit InterleavedRows(const StoredMatrix& B, int threads = 0);
  InterleavedRows(const InterleavedRows&) = delete;
  InterleavedRows& operator=(const InterleavedRows&) = delete;
  ~InterleavedRows();

  const StoredMatrix& matrix() const noexcept { return m_; }  // valid while this lives
  // Whether B can be re-laid this way.
  static bool fits(const StoredMatrix& B) noexcept;

  struct Data;

 private:
  std::unique_ptr<Data> d_;
  StoredMatrix m_;
};

}  // namespace lowp::quant
