// model/softmax_loops.hpp compiled for AVX-512 (CMakeLists.txt gives this file that ISA's flags):
// the exp and the reductions run 16 floats wide, where the baseline build's SSE2 does 4.
#include "model/softmax_avx512.hpp"

#include "model/softmax_loops.hpp"

namespace lowp::accuracy::detail {

float softmax_row_avx512(float* s, std::size_t n, float scale, bool normalize) {
  return softmax_row_values(s, n, scale, normalize);
}

}  // namespace lowp::accuracy::detail
