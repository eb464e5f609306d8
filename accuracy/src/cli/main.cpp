#include <exception>
#include <iostream>

#include "lowp/accuracy/cli.hpp"

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);  // line-by-line output without a flush per input line
  try {
    return lowp::run_cli(argc, argv, std::cin, std::cout, std::cerr);
  } catch (...) {  // run_cli catches everything; this guards what happens around it
    std::cerr << "lowp: unexpected error\n";
    return 1;
  }
}
