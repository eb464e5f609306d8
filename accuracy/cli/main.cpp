#include <iostream>

#include "lowp/accuracy/cli.hpp"

int main(int argc, char** argv) { return lowp::run_cli(argc, argv, std::cin, std::cout, std::cerr); }
