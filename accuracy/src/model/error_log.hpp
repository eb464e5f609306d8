// Where the forward pass records the error of each quantization point (private to lowp_accuracy).
#pragma once
#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lowp/accuracy/tensor_error.hpp"

namespace lowp::accuracy::detail {

// Signal and noise of every (layer, point), in the order the points were first met.
class ErrorLog {
 public:
  // Adds sum x^2 and sum (q - x)^2 over the finite pairs; counts non-finite q.
  void add(int layer, const std::string& point, const float* before, const float* after, std::size_t n);
  void add(const TensorError& e);
  // Sorted by layer (the classifier, layer -1, last), first-met order within a layer.
  std::vector<TensorError> entries() const;

 private:
  std::map<std::pair<int, std::string>, std::size_t> index_;
  std::vector<TensorError> entries_;
};

}  // namespace lowp::accuracy::detail
