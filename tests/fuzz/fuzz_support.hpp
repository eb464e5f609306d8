// Shared by the libFuzzer harnesses: every input must finish or throw lowp::Error. Anything
// else (another exception, a crash, a sanitizer report, memory past -rss_limit_mb) is a finding.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lowp/accuracy/eval.hpp"
#include "lowp/accuracy/memory.hpp"
#include "lowp/accuracy/model.hpp"
#include "lowp/accuracy/recipe.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::fuzz {

// The budget a harness runs under: well inside libFuzzer's -rss_limit_mb=2048, so a refusal
// by the budget is an answer and growth past the RSS limit is a finding.
inline void set_budget() { accuracy::set_max_memory(std::uint64_t{1} << 30); }

inline std::span<const std::uint8_t> bytes(const std::uint8_t* data, std::size_t size) { return {data, size}; }
inline std::string_view text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Prepare and a 4-token teacher-forced forward (ids 1 2 3 0, folded into the vocabulary),
// single-threaded, under `recipe` (default: the float32 reference).
inline void short_forward(const accuracy::LlamaModel& m, const accuracy::Recipe& recipe) {
  std::vector<int> ids = {1, 2, 3, 0};
  for (int& id : ids) id %= m.config.vocab_size;
  accuracy::EvalOptions opt;
  opt.threads = 1;
  opt.score_all = true;
  accuracy::evaluate(m, ids, recipe, opt);
}
inline void short_forward(const accuracy::LlamaModel& m) {
  static const accuracy::Recipe fp32 = accuracy::find_recipe("fp32");
  short_forward(m, fp32);
}

// Runs `body`; lowp::Error is the expected refusal, everything else escapes to libFuzzer.
template <class F>
int guarded(F&& body) {
  set_budget();
  try {
    body();
  } catch (const Error&) {
  }
  return 0;
}

}  // namespace lowp::fuzz
