// A quantized linear layer Y = X W^T (+ b), forward and backward, and the named recipes.
//
// X: M x K (tokens x in_features), W: N x K (out x in), Y: M x N, all row-major float32.
// Backward: dX = dY W (M x K), dW = dY^T X (N x K), db = sum over rows of dY.
// Each of the three GEMMs quantizes its two operands with its own spec (format, granularity,
// scale rule, rounding) after an optional rotation of the reduction dimension, then runs a
// float32 GEMM on the dequantized data (or, for SwitchBack, the real int8 GEMM).
#pragma once
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>
#include "lowp/hadamard/rotation.hpp"
#include "lowp/quant/quantize.hpp"

namespace lowp::quant {

// One GEMM C = A B^T: how A and B are quantized (nullopt: float32), and the rotation applied
// to both along the reduction dimension first (RotationKind::none: no rotation; the size is
// filled in from the shape).
struct GemmRecipe {
  std::optional<QuantSpec> a, b;
  hadamard::RotationKind rotation = hadamard::RotationKind::none;
  std::size_t rotation_block = 0;  // block_diagonal
  bool delayed = false;            // per-tensor scales from an amax history (TransformerEngine)
};

enum class LinearEngine { emulated, switchback_int8 };

struct LinearRecipe {
  std::string name;
  std::string note;  // one line: which paper / library it mirrors
  LinearEngine engine = LinearEngine::emulated;
  GemmRecipe fwd;    // Y  = X  W^T : a = X,  b = W
  GemmRecipe dgrad;  // dX = dY W   : a = dY, b = W^T
  GemmRecipe wgrad;  // dW = dY^T X : a = dY^T, b = X^T
};

std::span<const LinearRecipe> linear_presets();
// Looks a preset up by name; throws lowp::Error listing the names when unknown.
const LinearRecipe& linear_preset(std::string_view name);

// The layer. Holds W (and b), the gradients, and what the backward pass needs from the
// forward (the quantized or float X, per the recipe), plus delayed-scaling state.
class QuantLinear {
 public:
  QuantLinear(LinearRecipe recipe, std::size_t in_features, std::size_t out_features, bool bias);
  ~QuantLinear();
  QuantLinear(QuantLinear&&) noexcept;
  QuantLinear& operator=(QuantLinear&&) noexcept;

  std::vector<float>& weight();   // N x K
  std::vector<float>& bias();     // N (empty without bias)
  std::vector<float>& weight_grad();
  std::vector<float>& bias_grad();

  // Y (M x N) from X (M x K). `seed` drives the stochastic rounding of this step.
  void forward(const float* X, std::size_t M, float* Y, std::uint64_t seed = 0);
  // dX (M x K) from dY (M x N) for the last forward; adds into weight_grad()/bias_grad().
  // dX may be null when the input gradient is not needed.
  void backward(const float* dY, float* dX, std::uint64_t seed = 0);
  // Forward only, for evaluation: quantizes W once and caches it until weight() changes
  // (call invalidate_weight_cache() after editing weight()).
  void invalidate_weight_cache();

  const LinearRecipe& recipe() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace lowp::quant
