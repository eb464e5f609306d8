// The error a quantization point of the forward pass introduced (model/: the forward pass
// records it; evaluate() and the sweeps report it).
#pragma once
#include <cstddef>
#include <string>

namespace lowp::accuracy {

// signal = sum x^2 of the tensor before quantization, noise = sum (q(x) - x)^2, over every call
// at that point (finite pairs only; `nonfinite` counts NaN/Inf outputs). Points: the weights "wq"
// "wk" "wv" "wo" "gate" "up" "down" "classifier"; the linear inputs "x.<weight>"; "q", "k", "v",
// "p"; "kv.k", "kv.v".
struct TensorError {
  std::string point;
  int layer = -1;     // -1: not per layer (classifier)
  double signal = 0, noise = 0;
  std::size_t count = 0, nonfinite = 0;
  double sqnr_db() const;
};

}  // namespace lowp::accuracy
