// The tokenizer core: byte-level and SentencePiece BPE encode/decode.
#include "lowp/accuracy/tokenizer.hpp"

#include <cstdio>
#include <queue>

#include "lowp/numerics/error.hpp"
#include "tokenizer/bpe.hpp"
#include "tokenizer/sentencepiece.hpp"

namespace lowp::accuracy {

namespace {

// Length of the UTF-8 character starting at s[i]; malformed bytes count as one character.
std::size_t utf8_len(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
  if (i + n > s.size()) return 1;
  for (std::size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 1;
  return n;
}

// "<0xNN>" -> NN, else -1.
int byte_piece(std::string_view p) {
  if (p.size() != 6 || p.substr(0, 3) != "<0x" || p[5] != '>') return -1;
  int v = 0;
  for (char c : p.substr(3, 2)) {
    v <<= 4;
    if (c >= '0' && c <= '9') v |= c - '0';
    else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
    else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
    else return -1;
  }
  return v;
}

}  // namespace

Tokenizer Tokenizer::byte_level(int vocab_size) {
  if (vocab_size < 256)
    throw Error("a byte-level tokenizer needs a vocabulary of at least 256, the model has " + std::to_string(vocab_size));
  Tokenizer t;
  t.byte_level_ = true;
  for (int b = 0; b < 256; ++b) {
    t.pieces_.push_back(std::string(1, static_cast<char>(b)));
    t.types_.push_back(TokenType::byte);
    t.byte_ids_[b] = b;
  }
  if (vocab_size > 256) {
    t.bos_ = 256;
    t.pieces_.push_back("<s>");
    t.types_.push_back(TokenType::control);
  }
  if (vocab_size > 257) {
    t.eos_ = 257;
    t.pieces_.push_back("</s>");
    t.types_.push_back(TokenType::control);
  }
  // lowp's byte-level models are trained without BOS (their GGUF says add_bos_token = 0), so
  // text is fed as its bytes; BOS stays available to generation's empty prompt.
  t.add_bos_ = false;
  t.scores_.assign(t.pieces_.size(), 0.0f);
  return t;
}

Tokenizer::Tokenizer(std::vector<std::string> pieces, std::vector<float> scores, std::vector<TokenType> types,
                     int bos, int eos, int unk, const std::string& name, bool add_space_prefix)
    : pieces_(std::move(pieces)), scores_(std::move(scores)), types_(std::move(types)), bos_(bos), eos_(eos), unk_(unk),
      space_prefix_(add_space_prefix) {
  const int n = static_cast<int>(pieces_.size());
  if (n == 0) throw Error(name + ": the vocabulary is empty");
  if (scores_.size() != pieces_.size() || types_.size() != pieces_.size())
    throw Error(name + ": " + std::to_string(pieces_.size()) + " tokens but " + std::to_string(scores_.size()) +
                " scores and " + std::to_string(types_.size()) + " token types");
  for (auto [id, what] : {std::pair{bos_, "bos"}, std::pair{eos_, "eos"}, std::pair{unk_, "unknown"}})
    if (id < -1 || id >= n)
      throw Error(name + ": " + what + " token id " + std::to_string(id) + " is outside the vocabulary (" +
                  std::to_string(n) + " tokens)");
  byte_ids_.fill(-1);
  for (int id = 0; id < n; ++id) {
    const TokenType t = types_[id];
    const int b = byte_piece(pieces_[id]);
    if ((t == TokenType::byte || t == TokenType::normal) && b >= 0) {
      if (byte_ids_[b] < 0) byte_ids_[b] = id;
      types_[id] = TokenType::byte;
    } else if (t == TokenType::byte) {
      // Typed as a byte but not spelled <0xNN>: decoded as its piece, never as a byte.
      types_[id] = TokenType::normal;
    } else if (t == TokenType::normal || t == TokenType::user) {
      index_.emplace(pieces_[id], id);  // the first of duplicate pieces wins, as in a sorted lookup
    }
  }
}

namespace {
void check_id(int id, int n) {
  if (id < 0 || id >= n)
    throw Error("token id " + std::to_string(id) + " is outside the vocabulary (" + std::to_string(n) + ")");
}
}  // namespace

const std::string& Tokenizer::piece(int id) const {
  check_id(id, vocab_size());
  return pieces_[static_cast<std::size_t>(id)];
}

float Tokenizer::score(int id) const {
  check_id(id, vocab_size());
  return scores_[static_cast<std::size_t>(id)];
}

Tokenizer::TokenType Tokenizer::type(int id) const {
  check_id(id, vocab_size());
  return types_[static_cast<std::size_t>(id)];
}

int Tokenizer::lookup(std::string_view s) const {
  const auto it = index_.find(s);
  return it == index_.end() ? -1 : it->second;
}

std::vector<int> Tokenizer::encode(std::string_view text, bool add_bos, bool add_eos) const {
  std::vector<int> out;
  if (add_bos && bos_ >= 0) out.push_back(bos_);
  if (sp_) {
    sp_->encode(text, out);
  } else if (bpe_) {
    bpe_->encode(text, out);
  } else if (byte_level_) {
    for (char c : text) out.push_back(static_cast<unsigned char>(c));
  } else if (!text.empty()) {
    std::string s(space_prefix_ ? 1 : 0, ' ');  // the dummy prefix: words start with a space
    s.append(text);
    // Symbols form a linked list over s; a symbol is a vocabulary piece (mergeable) or a
    // character outside the vocabulary (emitted as byte tokens, never merged).
    struct Sym {
      std::size_t start, len;
      int prev, next, id;
    };
    std::vector<Sym> sym;
    for (std::size_t i = 0; i < s.size();) {
      const std::size_t n = utf8_len(s, i);
      const int k = static_cast<int>(sym.size());
      sym.push_back({i, n, k - 1, k + 1, lookup(std::string_view(s).substr(i, n))});
      i += n;
    }
    sym.back().next = -1;
    // Candidate merges: highest score first, then the leftmost; entries whose symbols changed
    // since they were queued are skipped when popped.
    struct Cand {
      float score;
      int left;
      std::size_t start, len;
      int id;
    };
    auto worse = [](const Cand& a, const Cand& b) { return a.score < b.score || (a.score == b.score && a.start > b.start); };
    std::priority_queue<Cand, std::vector<Cand>, decltype(worse)> q(worse);
    auto consider = [&](int l) {
      if (l < 0 || sym[l].next < 0 || sym[l].id < 0 || sym[sym[l].next].id < 0) return;
      const Sym& a = sym[l];
      const std::size_t len = a.len + sym[a.next].len;
      const int id = lookup(std::string_view(s).substr(a.start, len));
      if (id >= 0) q.push({scores_[id], l, a.start, len, id});
    };
    for (int l = 0; l + 1 < static_cast<int>(sym.size()); ++l) consider(l);
    while (!q.empty()) {
      const Cand c = q.top();
      q.pop();
      Sym& a = sym[c.left];
      if (a.len == 0 || a.next < 0 || a.len + sym[a.next].len != c.len) continue;  // stale
      Sym& b = sym[a.next];
      a.len = c.len;
      a.id = c.id;
      b.len = 0;  // removed
      a.next = b.next;
      if (b.next >= 0) sym[b.next].prev = c.left;
      consider(a.prev);
      consider(c.left);
    }
    for (int k = 0; k >= 0; k = sym[k].next) {
      const Sym& y = sym[k];
      if (y.id >= 0) {
        out.push_back(y.id);
        continue;
      }
      for (std::size_t i = 0; i < y.len; ++i) {
        const int b = byte_ids_[static_cast<unsigned char>(s[y.start + i])];
        if (b < 0 && unk_ < 0) {
          char hex[8];
          std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(s[y.start + i]));
          throw Error(std::string("cannot encode byte ") + hex + ": the vocabulary has no byte token for it");
        }
        out.push_back(b >= 0 ? b : unk_);
      }
    }
  }
  if (add_eos && eos_ >= 0) out.push_back(eos_);
  return out;
}

std::string Tokenizer::decode_token(int prev, int id) const {
  check_id(id, vocab_size());
  const std::string& p = pieces_[id];
  switch (types_[id]) {
    case TokenType::byte: {
      if (byte_level_) return p;
      return std::string(1, static_cast<char>(byte_piece(p)));
    }
    case TokenType::normal:
      if (bpe_) {
        std::string b = bpe_->piece_bytes(p);
        if (space_prefix_ && prev == bos_ && bos_ >= 0 && !b.empty() && b[0] == ' ') b.erase(0, 1);
        return b;
      }
      [[fallthrough]];
    case TokenType::user:
      if (space_prefix_ && prev == bos_ && bos_ >= 0 && !p.empty() && p[0] == ' ') return p.substr(1);
      return p;
    default:
      return {};
  }
}

std::string Tokenizer::decode(std::span<const int> ids) const {
  if (sp_) {
    for (int id : ids) check_id(id, vocab_size());
    return sp_->decode(ids);
  }
  std::string out;
  bool first = !byte_level_ && space_prefix_;  // drop the space encode put in front of the text
  for (int id : ids) {
    std::string t = decode_token(-1, id);
    if (first && !t.empty()) {
      if (t[0] == ' ') t.erase(0, 1);
      first = false;
    }
    out += t;
  }
  return out;
}

}  // namespace lowp::accuracy
