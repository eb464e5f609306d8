// TrainCorpus (corpus.hpp): the training and held-out windows of `lowp train`.
#include "train/corpus.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>

#include "lowp/numerics/error.hpp"
#include "lowp/numerics/rng.hpp"

namespace lowp::accuracy::train {

std::vector<std::size_t> batch_offsets(std::uint64_t seed, int step, std::size_t batch, std::size_t span) {
  const RngKey key = rng_key(seed ^ 0xda7a5eedULL);
  std::vector<std::size_t> off(batch);
  for (std::size_t b = 0; b < batch; ++b) {
    const std::uint64_t i = (static_cast<std::uint64_t>(step) * batch + b) * 2;
    const std::uint64_t r = (static_cast<std::uint64_t>(random_bits(key, i)) << 32) | random_bits(key, i + 1);
    off[b] = r % span;
  }
  return off;
}

TrainCorpus::TrainCorpus(const std::string& path, const std::string& init, int vocab_size, std::size_t window)
    : window_(window) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open corpus '" + path + "'");
  const std::string text(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>{});
  if (text.empty()) throw Error("corpus '" + path + "' is empty");
  const char* unit = "bytes";
  if (!init.empty()) {
    tokenizer_ = tokenizer_for_model(init, vocab_size);
    data_ = tokenizer_->encode(text, false, false);
    unit = "tokens";
  } else {
    data_.assign(text.begin(), text.end());
    for (auto& b : data_) b &= 0xff;
  }
  const std::size_t n = data_.size(), T = window;
  n_train_ = n - n / 10;
  if (n_train_ < T + 1 || n - n_train_ < T + 1)
    throw Error("corpus '" + path + "' has " + std::to_string(n) + " " + unit + ": its first 90% and last 10% must each hold one window of " +
                std::to_string(T + 1) + " " + unit + " (--ctx " + std::to_string(T) + ")");
}

void TrainCorpus::sample(std::uint64_t seed, int step, std::size_t batch, std::vector<int>& tok, std::vector<int>& tgt) const {
  const std::size_t T = window_;
  const std::vector<std::size_t> offsets = batch_offsets(seed, step, batch, n_train_ - T);
  for (std::size_t b = 0; b < batch; ++b) {
    const std::size_t off = offsets[b];
    for (std::size_t t = 0; t < T; ++t) {
      tok[b * T + t] = data_[off + t];
      tgt[b * T + t] = data_[off + t + 1];
    }
  }
}

std::size_t TrainCorpus::validation_windows(int wanted) const {
  return std::min<std::size_t>(available(), static_cast<std::size_t>(std::max(1, wanted)));
}

void TrainCorpus::validation_batch(std::size_t first, std::size_t n, std::size_t windows, std::vector<int>& tok,
                                   std::vector<int>& tgt) const {
  const std::size_t T = window_, avail = available();
  tok.resize(n * T);
  tgt.resize(n * T);
  for (std::size_t b = 0; b < n; ++b) {
    const std::size_t off = n_train_ + (first + b) * avail / windows * T;  // evenly spread
    for (std::size_t t = 0; t < T; ++t) {
      tok[b * T + t] = data_[off + t];
      tgt[b * T + t] = data_[off + t + 1];
    }
  }
}

}  // namespace lowp::accuracy::train
