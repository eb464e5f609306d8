// The tokens `lowp train` learns from (private): a text file as bytes or, fine-tuning a
// checkpoint, as that model's own tokens; the first 90% train, the last 10% is held out.
// Training windows start at counter-based offsets (so a resumed run draws the same batches);
// held-out windows are evenly spread.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lowp/accuracy/tokenizer.hpp"

namespace lowp::accuracy::train {

// The start of each of step `step`'s `batch` training windows: counter-based random offsets in
// [0, span) (span = training tokens - window) drawn from `seed`, so a seed fixes the batch order.
std::vector<std::size_t> batch_offsets(std::uint64_t seed, int step, std::size_t batch, std::size_t span);

class TrainCorpus {
 public:
  // Reads `path`: each byte one token or, with `init` (a checkpoint), the tokens of its
  // tokenizer over `vocab_size` (no BOS), as `lowp eval --text` finds it. Throws lowp::Error when
  // the file cannot be read or is empty, or its first 90% or last 10% holds no `window` + 1 tokens.
  TrainCorpus(const std::string& path, const std::string& init, int vocab_size, std::size_t window);

  const std::optional<Tokenizer>& tokenizer() const { return tokenizer_; }  // init's
  std::span<const int> tokens() const { return data_; }
  std::size_t n_train() const { return n_train_; }

  // Step `step`'s `batch` training windows into tok and their next tokens into tgt (batch x window).
  void sample(std::uint64_t seed, int step, std::size_t batch, std::vector<int>& tok, std::vector<int>& tgt) const;
  // How many held-out windows an evaluation asking for `wanted` uses (at least 1, at most all).
  std::size_t validation_windows(int wanted) const;
  // Held-out windows [first, first + n) of `windows` evenly spread ones into tok and tgt (n x window).
  void validation_batch(std::size_t first, std::size_t n, std::size_t windows, std::vector<int>& tok,
                        std::vector<int>& tgt) const;

 private:
  std::size_t available() const { return (data_.size() - n_train_ - 1) / window_; }

  std::optional<Tokenizer> tokenizer_;
  std::vector<int> data_;
  std::size_t n_train_ = 0, window_ = 0;
};

}  // namespace lowp::accuracy::train
