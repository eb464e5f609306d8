// The Scalify configuration of a training recipe (`model = scalify`, the scalify.* keys): the
// formats train/scalify_llama.hpp stores each kind of tensor in.
#pragma once
#include "lowp/formats/format.hpp"

namespace lowp::accuracy::train {

// The formats of the GEMM operands (weight, act: activations, grad: gradients; E4M3, E4M3,
// E5M2) and of every other tensor: fwd (op results of the forward: matmul outputs, residual
// stream, norms, softmax, SwiGLU) and bwd (of the backward). The defaults store those in the
// GEMM formats too (every tensor float8).
struct ScalifyConfig {
  Format weight, act, grad, fwd, bwd;
  ScalifyConfig();
  friend bool operator==(const ScalifyConfig&, const ScalifyConfig&) = default;
};

}  // namespace lowp::accuracy::train
