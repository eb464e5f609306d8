// Prefix reuse for one rank's share of a model sweep (private to lowp_accuracy): the recipes
// of a sensitivity sweep are its base plus one tensor, and every layer before that tensor's
// computes what the base computes. The base runs each window once, its residual stream kept
// at the layers the share's recipes start from; each recipe then runs from its layer on.
#pragma once
#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "eval/windows.hpp"
#include "sweep/split.hpp"

namespace lowp::accuracy::detail {

class PrefixCache {
 public:
  // The prefixes units [begin, end) of the job resume from; none when the job asks for no
  // reuse or when they do not fit the memory budget (the recipes then run whole).
  PrefixCache(const SweepJob& job, std::size_t begin, std::size_t end);

  // The fp32 reference computes the base (an identity base with no llama.cpp logits): its
  // run of window w can fill the cache through this tap (empty when w needs no prefix).
  bool reference_is_base() const { return reference_is_base_; }
  ResidualTap tap(std::size_t w);
  // Runs the base over every window needing a prefix not yet filled. A window the base fails
  // on is left empty: its recipes run whole and fail as they do without reuse.
  void fill(const SweepJob& job);
  // Recipe i's prefix on window w, or nothing (run it whole).
  std::optional<WindowPrefix> find(const SweepJob& job, std::size_t i, std::size_t w) const;

 private:
  struct Entry {
    std::set<std::size_t> layers;              // wanted
    std::size_t size = 0;                      // floats of one stream: T x dim
    std::map<std::size_t, std::vector<float>> x;  // filled
    std::vector<TensorError> errors;           // the base's, on this window
    bool filled = false;
  };
  std::map<std::size_t, Entry> windows_;
  bool reference_is_base_ = false;
};

// Recipe i of the job starts from job.resume[i] (> 0), from the base's prefix.
bool resumes(const SweepJob& job, std::size_t i);

}  // namespace lowp::accuracy::detail
