// `lowp tokenize`: a text through a model's tokenizer, the ids one per line.
#include <fstream>
#include <iterator>
#include <ostream>
#include <sstream>

#include "cli/command.hpp"
#include "lowp/accuracy/tokenizer.hpp"

namespace lowp::cli {
namespace {

struct TokenizeArgs {
  std::string model, text, bos = "off";
};

int run_tokenize(Io& io, const TokenizeArgs& a) {
  bos_option(a.bos, false);  // a bad value is a usage error before any file is read
  std::string text;
  if (a.text.empty()) {
    text.assign(std::istreambuf_iterator<char>(io.in), std::istreambuf_iterator<char>());
  } else {
    std::ifstream f(a.text, std::ios::binary);
    if (!f) throw Failure{exit_bad_data, "cannot open " + quote_input(a.text)};
    text.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    if (f.bad()) throw Failure{exit_bad_data, "cannot read " + quote_input(a.text)};
  }
  const accuracy::Tokenizer t = accuracy::load_tokenizer(a.model);
  const bool add_bos = bos_option(a.bos, t.add_bos());
  if (add_bos && t.bos() < 0) throw Failure{exit_bad_data, a.model + ": --bos on, but the tokenizer has no BOS token"};
  std::ostringstream out;
  for (int id : t.encode(text, add_bos, false)) out << id << '\n';
  io.out << out.str();
  io.out.flush();
  return exit_ok;
}

}  // namespace

Command add_tokenize_command(CLI::App& parent) {
  auto a = std::make_shared<TokenizeArgs>();
  CLI::App* app = parent.add_subcommand("tokenize", "Print the token ids of a text, one per line");
  app->add_option("--model", a->model,
                  "Tokenizer: a GGUF file (vocabulary-only will do), tokenizer.json, tokenizer.model, or a folder "
                  "holding tokenizer.json or tokenizer.model")
      ->required();
  app->add_option("--text", a->text, "Text file (default: standard input)");
  app->add_option("--bos", a->bos, "on: start with the BOS token; off: no BOS; auto: as the tokenizer asks (add_bos_token)")
      ->capture_default_str();
  app->footer(
      "The text is tokenized as a whole, raw bytes in (no trailing newline is added or removed);\n"
      "added tokens marked special (such as <|begin_of_text|>) are not recognised in the text.\n"
      "Exit status: 0 success; 1 bad data (tokenizer file, text); 2 usage error.");
  return {app, [a](Io& io) { return run_tokenize(io, *a); }};
}

}  // namespace lowp::cli
