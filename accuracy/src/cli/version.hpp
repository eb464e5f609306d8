// `lowp --version`'s text (version.cpp), in a header of its own: version.cpp is compiled alone
// (it carries the version macros) and so does not include CLI11 (command.hpp).
#pragma once
#include <string>

namespace lowp::cli {

// Version, build type, the kernels' instruction set on this CPU.
std::string version_text();

}  // namespace lowp::cli
