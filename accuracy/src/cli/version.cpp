// `lowp --version`: what was built, and which kernels run on this CPU.
#include <cstdlib>
#include <string>

#include "cli/version.hpp"
#include "lowp/numerics/cpu.hpp"

#ifndef LOWP_VERSION
#error "LOWP_VERSION is set by accuracy/CMakeLists.txt"
#endif

namespace lowp::cli {

std::string version_text() {
  std::string isa(isa_name(best_isa()));
  if (const char* cap = std::getenv("LOWP_ISA")) isa += std::string(" (capped by LOWP_ISA=") + cap + ")";
  return std::string("lowp ") + LOWP_VERSION + "\nbuild type: " + LOWP_BUILD_TYPE +
         "\nkernels: " + isa + " on this CPU (the best of scalar, avx2, avx512 it runs)";
}

}  // namespace lowp::cli
