// A float32 logits file (llama.cpp's run of a token list, `lowp eval --logits-out`): read as a
// reference run, and written.
#include <cstdint>
#include <fstream>
#include <span>
#include <vector>

#include "eval/windows.hpp"
#include "file/atomic_file.hpp"
#include "lowp/accuracy/base_logits.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::accuracy {

EvalRun read_logits_run(const std::string& path, const LlamaModel& model, std::span<const int> tokens,
                        const EvalOptions& opt) {
  const auto vocab = static_cast<std::size_t>(model.config.vocab_size);
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) throw Error("cannot read " + path);
  const auto size = static_cast<std::size_t>(f.tellg());
  const std::size_t want = tokens.size() * vocab * sizeof(float);
  if (size != want)
    throw Error(path + " holds " + std::to_string(size) + " bytes; float32 logits of the " + std::to_string(tokens.size()) +
                " tokens over vocab " + std::to_string(vocab) + " are " + std::to_string(want));
  std::vector<float> logits(tokens.size() * vocab);
  f.seekg(0);
  if (!f.read(reinterpret_cast<char*>(logits.data()), static_cast<std::streamsize>(want))) throw Error("cannot read " + path);
  const detail::Windows win = detail::windows_for(model, tokens, opt);
  EvalRun run;
  run.vocab = vocab;
  for (std::size_t w = 0; w < win.count(); ++w) {
    const std::size_t start = win.start(w), T = win.length(w);
    detail::score_window(logits.data() + start * vocab, tokens.subspan(start, T), opt.score_all ? 0 : T / 2, vocab, run,
                         opt.keep_log_probs);
  }
  return run;
}

void write_logits(const std::string& path, std::span<const float> logits) {
  // float32 little-endian: the host order on every platform lowp builds for (x86-64).
  detail::write_file_atomic(path, std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(logits.data()),
                                                                logits.size() * sizeof(float)));
}

}  // namespace lowp::accuracy
