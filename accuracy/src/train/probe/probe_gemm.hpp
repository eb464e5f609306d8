// The probe's GEMM measure (train/probe): each quantized GEMM of a pass, on the inputs that pass
// gave it, against the float32 GEMM of the same inputs, over draws and batches.
//   fwd   Y  = X W^T   reference rows: tokens 0, s, 2s, ...
//   dgrad dX = dY W    reference rows: tokens 0, s, 2s, ...
//   wgrad dW = dY^T X  reference rows: output features 0, s, 2s, ...   (s = kGemmRowStride)
#pragma once
#include <cstddef>
#include <map>
#include <utility>
#include <vector>

#include "train/llama_train.hpp"
#include "train/probe/probe_stats.hpp"

namespace lowp::accuracy::train::probe {

// Only every s-th output row gets a float32 reference: 1/8 of the float32 GEMMs' work, and
// still thousands of elements per GEMM and batch.
inline constexpr std::size_t kGemmRowStride = 8;

// One GEMM of one linear over the batches.
struct GemmSeg {
  DrawAccumulator acc;
  std::vector<BatchSums> batches;
  // Per batch (its first draw): the wider of the two operands' block-scale spreads, the sd of
  // log2 of each scale group's amax (NaN: one scale per operand, or the GEMM rotates or uses a
  // special quantizer, whose groups hold data the probe does not see).
  std::vector<double> scale_sd;
};

class GemmMeasure {
 public:
  GemmMeasure(int draws, int threads) : draws_(draws), threads_(threads) {}
  // A linear's forward (view.dy null: fwd) or backward (dgrad and wgrad; the linear's weight
  // gradient must hold this pass's dW alone) in draw `draw` (0, 1, ... in order) of a batch.
  void observe(const TrainLlama::GemmView& v, int draw);
  // Draw `draw` (> 0) of this batch gave draw 0's bits: its GEMMs are not observed again.
  void repeat(int draw);
  // After the last draw of a batch.
  void end_batch();
  // (layer * 16 + linear, gemm 0 fwd / 1 dgrad / 2 wgrad) -> its segment; the classifier's
  // layer is kClassifierLayer.
  static constexpr int kClassifierLayer = 1 << 20;
  const std::map<std::pair<int, int>, GemmSeg>& segs() const { return segs_; }

 private:
  void add(int key, int gemm, int draw, std::size_t n, double scale_sd);
  int draws_, threads_;
  std::map<std::pair<int, int>, GemmSeg> segs_;
  std::vector<float> xs_, ref_, est_;
};

}  // namespace lowp::accuracy::train::probe
