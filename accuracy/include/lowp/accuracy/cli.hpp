// The `lowp` command line as a library call, so tests can run it in-process.
#pragma once
#include <iosfwd>

namespace lowp {

// Runs `lowp argv...` reading `in`, writing results to `out` and the one-line error to `err`.
// Returns the process exit code.
int run_cli(int argc, const char* const* argv, std::istream& in, std::ostream& out, std::ostream& err);

// The program's main(): starts MPI when lowp was built with it (a run under `mpirun -np N` has
// N ranks), runs run_cli on the standard streams and, when a rank fails while others run, ends
// the whole job with that exit code rather than leave them waiting for it.
int run_main(int argc, char** argv);

}  // namespace lowp
