// model/softmax_loops.hpp's row loop built for AVX-512: call only when best_isa() is Isa::avx512.
#pragma once
#include <cstddef>

namespace lowp::accuracy::detail {

float softmax_row_avx512(float* s, std::size_t n, float scale, bool normalize);

}  // namespace lowp::accuracy::detail
