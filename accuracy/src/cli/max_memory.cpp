// --max-memory, shared by the subcommands that read checkpoints (eval, sweep, generate).
#include "cli/command.hpp"
#include "lowp/accuracy/memory.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::cli {

void add_max_memory_option(CLI::App* app, std::string& value) {
  app->add_option("--max-memory", value,
                  "Memory budget for what the model file asks for (bytes, or 512M, 1.5G; default: half the physical "
                  "memory, " + accuracy::format_memory_size(static_cast<double>(accuracy::default_max_memory())) +
                      " here); a file asking for more is refused");
}

void apply_max_memory(const std::string& value) {
  try {
    accuracy::set_max_memory(value.empty() ? 0 : accuracy::parse_memory_size(value));
  } catch (const Error& e) {
    throw Failure{exit_usage, std::string("--max-memory: ") + e.what()};
  }
}

}  // namespace lowp::cli
