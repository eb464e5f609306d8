// Lines of text for libsentencepiece's trainer (tests that train a tiny tokenizer.model: no
// .model file ships with Debian or ../shared).
#pragma once
#include <sentencepiece_trainer.h>

#include <string>
#include <vector>

namespace lowp::test {

class SpmLines : public sentencepiece::SentenceIterator {
 public:
  explicit SpmLines(std::vector<std::string> s) : s_(std::move(s)) {}
  bool done() const override { return i_ >= s_.size(); }
  void Next() override { ++i_; }
  const std::string& value() const override { return s_[i_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  std::vector<std::string> s_;
  std::size_t i_ = 0;
};

}  // namespace lowp::test
