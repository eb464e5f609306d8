// A matrix re-laid for the one-row GEMM. Float32, f16 or bf16 rows 64 at a time, element k of
// row r of a group at [k * 64 + r]; block-coded rows that offer an interleaved dot (StoredMatrix::
// dot_interleaved) 16 at a time, byte b of row r of a group at [b * 16 + r] (or words of
// StoredMatrix::interleave_word bytes so), so that the dot finds a column's 16 rows side by side
// without transposing them. A decode step's product
// then reads one stream of whole cache lines per group, where rows side by side in their own
// layout make 16 streams per thread, which the hardware prefetcher follows at about two thirds
// of the bandwidth one stream gets (bench_decode). gemm_f32 reads it as a StoredMatrix with
// the same bits as the rows it came from, so it serves windows too.
#pragma once
#include <cstddef>
#include <memory>

#include "lowp/quant/gemm.hpp"

namespace lowp::quant {

class InterleavedRows {
 public:
  // B: StoredType::f32, f16 or bf16, or custom with dot_interleaved (its blocks' bytes a
  // multiple of interleave_word, 1 or 4), without a row map, rows > 0, cols a multiple of 32
  // (lowp::Error otherwise). The copy is made on `threads` OpenMP
  // threads (0: all); B's data is not read again (a custom B's decoder context must outlive
  // the copy).
  explicit InterleavedRows(const StoredMatrix& B, int threads = 0);
  InterleavedRows(const InterleavedRows&) = delete;
  InterleavedRows& operator=(const InterleavedRows&) = delete;
  ~InterleavedRows();

  // Valid while this lives. Its data is aligned to 2 MiB and its dots load it aligned: a copy
  // of its bytes put in matrix().data must be aligned to 64 bytes at least.
  const StoredMatrix& matrix() const noexcept { return m_; }
  // Whether B can be re-laid this way.
  static bool fits(const StoredMatrix& B) noexcept;

  struct Data;

 private:
  std::unique_ptr<Data> d_;
  StoredMatrix m_;
};

}  // namespace lowp::quant
