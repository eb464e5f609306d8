// SentencePiece models: encoding and decoding are the library's own.
#include "tokenizer/sentencepiece.hpp"

#include <sentencepiece_processor.h>

#include "file/mapped_file.hpp"
#include "lowp/numerics/error.hpp"
#include "tokenizer/bpe.hpp"

namespace lowp::accuracy::detail {

void SpModel::encode(std::string_view text, std::vector<int>& out) const {
  std::vector<int> ids;
  const auto st = sp->Encode(text, &ids);
  if (!st.ok()) throw Error(name + ": SentencePiece cannot encode the text: " + st.ToString());
  out.insert(out.end(), ids.begin(), ids.end());
}

std::string SpModel::decode(std::span<const int> ids) const {
  std::string text;
  const auto st = sp->Decode(std::vector<int>(ids.begin(), ids.end()), &text);
  if (!st.ok()) throw Error(name + ": SentencePiece cannot decode the ids: " + st.ToString());
  return text;
}

Tokenizer TokenizerBuilder::sentencepiece(const std::string& path) {
  auto sp = std::make_shared<sentencepiece::SentencePieceProcessor>();
  // The library reads the file itself; read it here first for lowp's own error on a missing file.
  const std::string bytes = read_text_file(path);
  const auto st = sp->LoadFromSerializedProto(bytes);
  if (!st.ok()) throw Error(path + ": not a SentencePiece model: " + st.ToString());
  const int n = sp->GetPieceSize();
  if (n <= 0) throw Error(path + ": the SentencePiece model has no pieces");
  using TT = Tokenizer::TokenType;
  Tokenizer t;
  t.byte_ids_.fill(-1);
  for (int id = 0; id < n; ++id) {
    std::string p = sp->IdToPiece(id);
    TT type = TT::normal;
    if (sp->IsUnknown(id)) type = TT::unknown;
    else if (sp->IsControl(id)) type = TT::control;
    else if (sp->IsUnused(id)) type = TT::unused;
    else if (sp->IsByte(id)) type = TT::byte;
    // Pieces as the GGUF vocabularies keep them: U+2581 stands for a space.
    std::string q;
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (p.compare(i, 3, "\xE2\x96\x81") == 0) {
        q += ' ';
        i += 2;
      } else {
        q += p[i];
      }
    }
    t.pieces_.push_back(std::move(q));
    t.scores_.push_back(sp->GetScore(id));
    t.types_.push_back(type);
  }
  t.bos_ = sp->bos_id() >= 0 && sp->bos_id() < n ? sp->bos_id() : -1;
  t.eos_ = sp->eos_id() >= 0 && sp->eos_id() < n ? sp->eos_id() : -1;
  t.unk_ = sp->unk_id() >= 0 && sp->unk_id() < n ? sp->unk_id() : -1;
  t.add_bos_ = true;  // llama.cpp's default for SentencePiece (SPM) vocabularies
  auto m = std::make_shared<SpModel>();
  m->sp = std::move(sp);
  m->name = path;
  t.sp_ = std::move(m);
  return t;
}

}  // namespace lowp::accuracy::detail
