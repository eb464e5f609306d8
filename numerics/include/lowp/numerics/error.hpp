// The one exception type lowp throws for bad input. Its message is a single line saying
// what was wrong and where, the same line the CLI prints before exiting non-zero.
// Besides it, a lowp function lets through only std::bad_alloc (memory that the budget of
// lowp/accuracy/memory.hpp allowed but the system did not have); anything else is a bug.
// `lowp` turns every exception into one line on stderr and exit status 1.
#pragma once
#include <stdexcept>
#include <string>

namespace lowp {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace lowp
