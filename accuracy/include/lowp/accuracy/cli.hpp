// The `lowp` command line as a library call, so tests can run it in-process.
#pragma once
#include <iosfwd>

namespace lowp {

// Runs `lowp argv...` reading `in`, writing results to `out` and the one-line error to `err`.
// Returns the process exit code.
int run_cli(int argc, const char* const* argv, std::istream& in, std::ostream& out, std::ostream& err);

}  // namespace lowp
