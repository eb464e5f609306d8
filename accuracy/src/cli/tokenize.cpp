// `lowp tokenize`: a text through a model's tokenizer, the ids one per line.
#include <fstream>
#include <iterator>
#include <ostream>
#include <sstream>

#include <cstdint>
#include <filesystem>

#include "cli/command.hpp"
#include "io/gguf_file.hpp"
#include "lowp/accuracy/loaders.hpp"
#include "lowp/accuracy/tokenizer.hpp"

namespace lowp::cli {
namespace {

struct TokenizeArgs {
  std::string model, text, bos = "off";
  int vocab = 0;
};

// --model as every other command finds a tokenizer: a tokenizer file or folder; a model (a
// built-in name, a GGUF, llama2.c .bin, safetensors or HF folder) with the tokenizer `lowp eval`
// uses for it; or, with --vocab, llama2.c's tokenizer.bin (it does not store its size).
accuracy::Tokenizer find_tokenizer(const TokenizeArgs& a) {
  namespace fs = std::filesystem;
  const std::string path = accuracy::resolve_model_path(a.model);
  std::error_code ec;
  const bool dir = fs::is_directory(path, ec);
  const std::string ext = fs::path(path).extension().string();
  bool gguf = false;
  if (!dir && fs::is_regular_file(path, ec)) {
    std::ifstream f(path, std::ios::binary);
    std::uint8_t magic[4] = {};
    gguf = f.read(reinterpret_cast<char*>(magic), 4) && accuracy::detail::has_gguf_magic(magic);
  }
  const bool model_dir = dir && fs::exists(fs::path(path) / "config.json", ec);
  const bool tokenizer_file = gguf || ext == ".json" || ext == ".model" || (dir && !model_dir);
  if (a.vocab != 0) {
    if (a.vocab < 0) throw Failure{exit_usage, "--vocab must be a positive number of tokens"};
    if (tokenizer_file || dir) throw Failure{exit_usage, "--vocab applies to llama2.c's tokenizer.bin only"};
    return accuracy::load_llama2c_tokenizer(path, a.vocab);
  }
  if (tokenizer_file) return accuracy::load_tokenizer(path);
  accuracy::LlamaModel m;
  try {
    m = accuracy::load_model(path, accuracy::WeightStorage::mapped);
  } catch (const Error& e) {
    if (model_dir) throw;
    throw Failure{exit_bad_data, std::string(e.what()) +
                                     " (for llama2.c's tokenizer.bin give --vocab N, or the model it belongs to)"};
  }
  return accuracy::tokenizer_for_model(path, m.config.vocab_size);
}

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
  const accuracy::Tokenizer t = find_tokenizer(a);
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
                  "Tokenizer: a GGUF file (vocabulary-only will do), tokenizer.json, tokenizer.model, a folder "
                  "holding tokenizer.json or tokenizer.model, llama2.c's tokenizer.bin (with --vocab), or a model "
                  "(built-in name, llama2.c .bin, safetensors, HF folder) with the tokenizer lowp eval uses for it")
      ->required();
  app->add_option("--vocab", a->vocab, "The vocabulary size of llama2.c's tokenizer.bin (the model's vocab_size)");
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
