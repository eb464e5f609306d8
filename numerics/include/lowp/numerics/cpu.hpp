// Which SIMD instruction sets this CPU offers, checked once at run time.
#pragma once
#include <string_view>

namespace lowp {

enum class Isa { scalar, avx2, avx512 };  // avx2 includes FMA; avx512 means F+BW+DQ+CD+VL

Isa best_isa() noexcept;                 // the best this CPU runs (honours LOWP_ISA, see below)
bool isa_available(Isa isa) noexcept;    // whether kernels for `isa` may run here
std::string_view isa_name(Isa isa) noexcept;

}  // namespace lowp
