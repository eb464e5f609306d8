// A SentencePiece tokenizer.model through libsentencepiece (private).
#pragma once
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace lowp::accuracy::detail {

struct SpModel {
  std::shared_ptr<sentencepiece::SentencePieceProcessor> sp;
  std::string name;
  void encode(std::string_view text, std::vector<int>& out) const;  // appends the ids
  std::string decode(std::span<const int> ids) const;
};

}  // namespace lowp::accuracy::detail
