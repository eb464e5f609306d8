// llama.cpp's --kl-divergence-base file: reading it as a reference run, writing one.
#include "lowp/accuracy/base_logits.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ostream>

#include "file/atomic_file.hpp"
#include "file/mapped_file.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::accuracy {

namespace {

constexpr char kMagic[8] = {'_', 'l', 'o', 'g', 'i', 't', 's', '_'};

std::uint64_t row_words(std::uint64_t vocab) { return 2 * ((vocab + 1) / 2) + 4; }
std::uint64_t rows_per_chunk(std::uint64_t ctx) { return ctx - 1 - ctx / 2; }

}  // namespace

BaseLogits read_base_logits(const std::string& path) {
  detail::MappedFile f(path);
  detail::ByteReader r(f.bytes(), path);
  if (std::memcmp(r.take(8, "magic").data(), kMagic, 8) != 0)
    r.fail("not a llama.cpp log-probabilities file (it does not start with '_logits_')");
  const auto ctx = r.read<std::int32_t>("n_ctx");
  const auto vocab = r.read<std::int32_t>("n_vocab");
  const auto chunks = r.read<std::int32_t>("n_chunk");
  if (ctx < 3) r.fail("n_ctx is " + std::to_string(ctx) + ", must be at least 3 (a window with a scored position)");
  if (vocab <= 0) r.fail("n_vocab is " + std::to_string(vocab) + ", must be positive");
  if (chunks <= 0) r.fail("n_chunk is " + std::to_string(chunks) + ", must be positive");
  const std::uint64_t n_tok = static_cast<std::uint64_t>(ctx) * static_cast<std::uint64_t>(chunks);
  const std::uint64_t rows = rows_per_chunk(static_cast<std::uint64_t>(ctx)) * static_cast<std::uint64_t>(chunks);
  const std::uint64_t nv = row_words(static_cast<std::uint64_t>(vocab));
  // Every factor is below 2^31: the products fit 64 bits.
  const std::uint64_t want = 20 + 4 * n_tok + 2 * rows * nv;
  if (want != f.bytes().size())
    r.fail("header (n_ctx " + std::to_string(ctx) + ", n_vocab " + std::to_string(vocab) + ", n_chunk " +
           std::to_string(chunks) + ") implies " + std::to_string(want) + " bytes, the file has " +
           std::to_string(f.bytes().size()));

  BaseLogits b;
  b.ctx = ctx;
  b.tokens.resize(n_tok);
  std::memcpy(b.tokens.data(), r.take(4 * n_tok, "tokens").data(), 4 * n_tok);
  for (std::uint64_t i = 0; i < n_tok; ++i)
    if (b.tokens[i] < 0 || b.tokens[i] >= vocab)
      r.fail("token " + std::to_string(i) + " is id " + std::to_string(b.tokens[i]) + ", outside [0, " +
             std::to_string(vocab) + ")");
  EvalRun& run = b.run;
  run.vocab = static_cast<std::size_t>(vocab);
  run.log_probs.resize(rows * static_cast<std::uint64_t>(vocab));
  run.targets.reserve(rows);
  std::uint64_t row = 0;
  for (std::int32_t c = 0; c < chunks; ++c)
    for (std::uint64_t t = static_cast<std::uint64_t>(ctx) / 2; t + 1 < static_cast<std::uint64_t>(ctx); ++t, ++row) {
      const detail::Bytes words = r.take(2 * nv, "log-probabilities row " + std::to_string(row));
      float scale, min_log_prob;
      std::memcpy(&scale, words.data(), 4);
      std::memcpy(&min_log_prob, words.data() + 4, 4);
      float* out = run.log_probs.data() + row * static_cast<std::uint64_t>(vocab);
      bool finite = std::isfinite(scale) && std::isfinite(min_log_prob);
      for (std::int32_t v = 0; v < vocab; ++v) {
        std::uint16_t q;
        std::memcpy(&q, words.data() + 8 + 2 * static_cast<std::size_t>(v), 2);
        out[v] = scale * static_cast<float>(q) + min_log_prob;  // as llama.cpp decodes it
      }
      const int target = b.tokens[static_cast<std::uint64_t>(c) * static_cast<std::uint64_t>(ctx) + t + 1];
      run.targets.push_back(target);
      if (finite)
        run.nll_sum -= out[target];
      else
        ++run.nonfinite;
    }
  return b;
}

void write_base_logits(const std::string& path, int ctx, std::span<const int> tokens, const EvalRun& run) {
  if (ctx < 3) throw Error(path + ": a window of " + std::to_string(ctx) + " tokens has no scored position to write");
  const std::uint64_t vocab = run.vocab, chunks = tokens.size() / static_cast<std::uint64_t>(ctx);
  if (chunks == 0)
    throw Error(path + ": " + std::to_string(tokens.size()) + " tokens do not fill one window of " + std::to_string(ctx));
  if (vocab == 0 || vocab > INT32_MAX || chunks > INT32_MAX) throw Error(path + ": the run's sizes do not fit the format");
  const std::uint64_t rows = rows_per_chunk(static_cast<std::uint64_t>(ctx)) * chunks;
  if (run.scored() < rows || run.log_probs.size() < rows * vocab)
    throw Error(path + ": the run scored " + std::to_string(run.scored()) + " positions; " + std::to_string(chunks) +
                " windows of " + std::to_string(ctx) + " need " + std::to_string(rows) +
                " (the second half of each window, not --score-all)");
  for (std::uint64_t i = 0; i < rows; ++i) {
    const std::uint64_t c = i / rows_per_chunk(static_cast<std::uint64_t>(ctx)),
                        t = static_cast<std::uint64_t>(ctx) / 2 + i % rows_per_chunk(static_cast<std::uint64_t>(ctx));
    if (run.targets[i] != tokens[c * static_cast<std::uint64_t>(ctx) + t + 1])
      throw Error(path + ": the run's scored positions are not the second halves of windows of " + std::to_string(ctx));
  }

  // Streamed row by row: a 128k vocabulary makes this file gigabytes.
  detail::write_file_atomic(path, [&](std::ostream& f) {
    const std::int32_t head[3] = {ctx, static_cast<std::int32_t>(vocab), static_cast<std::int32_t>(chunks)};
    f.write(kMagic, 8);
    f.write(reinterpret_cast<const char*>(head), sizeof head);
    f.write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(4 * chunks * static_cast<std::uint64_t>(ctx)));
    std::vector<std::uint16_t> words(row_words(vocab));
    for (std::uint64_t i = 0; i < rows; ++i) {
      const float* lp = run.log_probs.data() + i * vocab;
      float mx = lp[0], mn = lp[0];
      for (std::uint64_t v = 0; v < vocab; ++v) {
        if (!std::isfinite(lp[v]))
          throw Error(path + ": scored position " + std::to_string(i) + " has a non-finite log-probability");
        mx = std::max(mx, lp[v]);
        mn = std::min(mn, lp[v]);
      }
      // llama.cpp's encoding: [max - 16, max] (or the row's range) in 65535 steps, to nearest-even.
      mn = std::max(mn, mx - 16);
      const float scale = (mx - mn) / 65535.f;
      std::fill(words.begin(), words.end(), 0);
      std::memcpy(words.data(), &scale, 4);
      std::memcpy(words.data() + 2, &mn, 4);
      if (scale > 0) {
        const float inv = 1 / scale;
        for (std::uint64_t v = 0; v < vocab; ++v)
          if (lp[v] > mn) words[4 + v] = static_cast<std::uint16_t>(std::clamp(std::lrint(inv * (lp[v] - mn)), 0L, 65535L));
      }
      f.write(reinterpret_cast<const char*>(words.data()), static_cast<std::streamsize>(2 * words.size()));
    }
  });
}

}  // namespace lowp::accuracy
