// run_cli: the `lowp` program. Each subcommand lives in its own cli/<name>.cpp.
#include "lowp/accuracy/cli.hpp"

#include <exception>
#include <iostream>
#include <istream>
#include <new>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/command.hpp"
#include "dist/comm.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp {
namespace {

std::string first_line(std::string_view s) { return std::string(s.substr(0, s.find('\n'))); }

// One write per error line: under mpirun a line written piecewise can be split by Open MPI's
// own MPI_ABORT banner (std::cerr flushes after every <<).
void error_line(std::ostream& err, const std::string& prefix, std::string_view message) {
  err << (prefix + ": " + std::string(message) + "\n") << std::flush;
}

}  // namespace

int run_cli(int argc, const char* const* argv, std::istream& in, std::ostream& out, std::ostream& err) {
  using namespace cli;
  CLI::App app{"lowp: exact emulation of low-precision number formats (FP8, FP6, FP4, BF16, int8, ...)", "lowp"};
  app.require_subcommand(1);
  app.set_version_flag("--version", [] { return version_text(); }, "Print the version, build type and kernel ISA");
  app.footer(
      "Run `lowp <command> --help` for a command's options.\n"
      "Exit status: 0 success; 1 bad input data (stderr names the line); 2 usage error (bad\n"
      "option, unknown format or rounding mode). Every error is one line on stderr.");
  // The subcommands, in the order --help lists them.
  const std::vector<Command> commands = {
      add_formats_command(app),
      add_cast_command(app),
      add_decode_command(app),
      add_golden_command(app),
      add_eval_command(app),
      add_recipes_command(app),
      add_sweep_command(app),
      add_search_command(app),
      add_tokenize_command(app),
      add_train_command(app),
      add_probe_command(app),
      add_generate_command(app),
  };

  // "lowp <command>" once a command is known; under mpirun the error line names its rank.
  std::string prefix = accuracy::dist::size() > 1
                           ? "lowp (rank " + std::to_string(accuracy::dist::rank()) + " of " + std::to_string(accuracy::dist::size()) + ")"
                           : std::string("lowp");
  try {
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      if (e.get_exit_code() == 0) return app.exit(e, out, err);  // --help
      for (const auto* sub : app.get_subcommands()) prefix += " " + sub->get_name();
      if (app.get_subcommands().empty()) {
        std::string names;
        for (const auto& c : commands) names += (names.empty() ? "" : ", ") + c.app->get_name();
        // CLI11 reports a missing command before an unknown word, so name the word here.
        if (argc > 1 && argv[1][0] != '-')
          throw Failure{exit_usage, "unknown command " + quote_input(argv[1]) + "; valid commands: " + names};
        if (argc > 1)  // the program itself has no options but --help
          throw Failure{exit_usage, "unknown option " + quote_input(argv[1]) + "; run `lowp --help`"};
        throw Failure{exit_usage, "a command is required (" + names + "); run `lowp --help`"};
      }
      throw Failure{exit_usage, e.what()};
    }
    for (const auto& c : commands) {
      if (!c.app->parsed()) continue;
      prefix += " " + c.app->get_name();
      Io io{in, out, err};
      return c.run(io);
    }
    throw Failure{exit_usage, "no command given; run `lowp --help`"};
  } catch (const Failure& f) {
    out.flush();
    error_line(err, prefix, f.message);
    return f.exit_code;
  } catch (const Error& e) {
    out.flush();
    error_line(err, prefix, e.what());
    return exit_bad_data;
  } catch (const std::bad_alloc&) {  // within --max-memory, but the system had less
    out.flush();
    error_line(err, prefix, "out of memory (the system refused an allocation; see --max-memory)");
    return exit_bad_data;
  } catch (const std::exception& e) {  // nothing escapes: one line, exit 1
    out.flush();
    error_line(err, prefix, first_line(e.what()));
    return exit_bad_data;
  } catch (...) {
    out.flush();
    error_line(err, prefix, "unexpected error");
    return exit_bad_data;
  }
}

int run_main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);  // line-by-line output without a flush per input line
  int code = 1;
  try {
    accuracy::dist::Session mpi(argc, argv);
    code = run_cli(argc, argv, std::cin, std::cout, std::cerr);
    if (code != 0) {
      std::cout.flush();
      std::cerr.flush();
      accuracy::dist::abort_job(code);  // returns with one rank
    }
  } catch (...) {  // run_cli catches everything; this guards what happens around it
    std::cerr << "lowp: unexpected error\n";
    std::cerr.flush();
    accuracy::dist::abort_job(1);
    return 1;
  }
  return code;
}

}  // namespace lowp
