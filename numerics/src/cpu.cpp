#include "lowp/numerics/cpu.hpp"

#include <cpuid.h>

#include <cstdlib>
#include <string_view>

namespace lowp {
namespace {

// CPUID leaf 1, ECX bit 29: clang before 17 has no "f16c" in __builtin_cpu_supports.
bool has_f16c() noexcept {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}

bool cpu_has(Isa isa) noexcept {
  __builtin_cpu_init();
  switch (isa) {
    case Isa::scalar: return true;
    case Isa::avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("bmi2") && has_f16c();
    case Isa::avx512:
      return cpu_has(Isa::avx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512vl");
  }
  return false;
}

// LOWP_ISA=scalar|avx2|avx512 caps the ISA used (to test or compare the fallbacks).
Isa cap_from_env() noexcept {
  const char* e = std::getenv("LOWP_ISA");
  if (!e) return Isa::avx512;
  const std::string_view v{e};
  if (v == "scalar") return Isa::scalar;
  if (v == "avx2") return Isa::avx2;
  return Isa::avx512;
}

}  // namespace

// Asked once per kernel call, sometimes per row: CPUID traps to the hypervisor in a VM
// (microseconds), so the answers are read once.
bool isa_available(Isa isa) noexcept {
  static const bool has[3] = {true, cpu_has(Isa::avx2), cpu_has(Isa::avx512)};
  const auto i = static_cast<unsigned>(isa);
  return i < 3 && has[i];
}

Isa best_isa() noexcept {
  static const Isa best = [] {
    const Isa cap = cap_from_env();
    for (Isa i : {Isa::avx512, Isa::avx2})
      if (static_cast<int>(i) <= static_cast<int>(cap) && cpu_has(i)) return i;
    return Isa::scalar;
  }();
  return best;
}

std::string_view isa_name(Isa isa) noexcept {
  switch (isa) {
    case Isa::scalar: return "scalar";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
  }
  return "?";
}

}  // namespace lowp
