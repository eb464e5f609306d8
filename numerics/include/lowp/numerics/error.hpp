// The one exception type lowp throws for bad input. Its message is a single line saying
// what was wrong and where, the same line the CLI prints before exiting non-zero.
#pragma once
#include <stdexcept>
#include <string>

namespace lowp {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace lowp
