#include "lowp/accuracy/cli.hpp"

int main(int argc, char** argv) { return lowp::run_main(argc, argv); }
