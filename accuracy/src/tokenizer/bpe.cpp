// Merge-ranked BPE with regex pre-tokenization (PCRE2, Unicode properties).
#include "tokenizer/bpe.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <array>
#include <queue>

#include "file/mapped_file.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::accuracy::detail {

namespace {

pcre2_code* as_code(void* p) { return static_cast<pcre2_code*>(p); }

std::size_t utf8_char_len(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  const std::size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  return std::min(n, s.size() - i);
}

void put_utf8(std::string& s, unsigned cp) {
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// GPT-2's bytes_to_unicode: the printable Latin-1 bytes stand for themselves, the other 68
// bytes take the code points from U+0100 on, in byte order.
struct ByteTable {
  std::array<std::string, 256> chars;
  std::unordered_map<unsigned, unsigned char> back;  // code point -> byte
  ByteTable() {
    unsigned next = 256;
    for (unsigned b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const unsigned cp = printable ? b : next++;
      put_utf8(chars[b], cp);
      back.emplace(cp, static_cast<unsigned char>(b));
    }
  }
};
const ByteTable& byte_table() {
  static const ByteTable t;
  return t;
}

const std::string kMetaspace = "\xE2\x96\x81";  // U+2581

// The regexes, from llama.cpp's llama-vocab.cpp (llm_tokenizer_bpe). Case-insensitive
// contractions are spelled out as llama.cpp does ('[sS] for (?i:'s)): PCRE2's caseless matching
// would also take U+017F and the Kelvin sign.
const char* const kGpt2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
const char* const kLlama3 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kQwen2 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// Mistral-Nemo's tokenizer.json regex as written there (PCRE2 has the \p{Lu}... classes that
// llama.cpp has to approximate).
const char* const kTekken =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|[^\\r\\n\\p{L}\\p{N}]?"
    "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|"
    "\\s+(?!\\S)|\\s+";
// The cased letters (Lu, Ll, Lt) as DeepSeek's tokenizer.json lists them, written as code
// points so that no editor's Unicode normalization can change them (U+212A KELVIN SIGN is
// not 'K').
const char* const kDeepseekLlmLetters =
    "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}\\x{1C4}-\\x{293}"
    "\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}\\x{37F}\\x{386}\\x{388}-\\x{38A}"
    "\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}"
    "\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}"
    "\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}"
    "\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}"
    "\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}"
    "\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}"
    "\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}"
    "\\x{2126}\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}"
    "\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}"
    "\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}"
    "\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}"
    "\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}\\x{104B0}-\\x{104D3}"
    "\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}"
    "\\x{1E900}-\\x{1E943}]+";
const char* const kCjk = "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+";

}  // namespace

const std::string& byte_char(unsigned char b) { return byte_table().chars[b]; }

std::size_t invalid_utf8_at(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t n;
    unsigned cp, min;
    if ((c & 0xE0) == 0xC0) n = 2, cp = c & 0x1F, min = 0x80;
    else if ((c & 0xF0) == 0xE0) n = 3, cp = c & 0x0F, min = 0x800;
    else if ((c & 0xF8) == 0xF0) n = 4, cp = c & 0x07, min = 0x10000;
    else return i;
    if (i + n > s.size()) return i;
    for (std::size_t k = 1; k < n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (d & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) return i;
    i += n;
  }
  return std::string_view::npos;
}

Regex::Regex(const std::string& pattern, const std::string& name) : pattern_(pattern) {
  int err = 0;
  PCRE2_SIZE at = 0;
  pcre2_code* c = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &err, &at, nullptr);
  if (c == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    throw Error(name + ": pre-tokenizer regex " + show_string(pattern) + " does not compile at offset " +
                std::to_string(at) + ": " + reinterpret_cast<const char*>(msg));
  }
  pcre2_jit_compile(c, PCRE2_JIT_COMPLETE);  // optional: the interpreter runs when JIT is unavailable
  code_ = c;
}

Regex::~Regex() { pcre2_code_free(as_code(code_)); }

void Regex::split(std::string_view text, std::size_t base, std::vector<std::pair<std::size_t, std::size_t>>& out) const {
  struct MatchData {
    pcre2_match_data* p;
    ~MatchData() { pcre2_match_data_free(p); }
  } md{pcre2_match_data_create(1, nullptr)};
  if (md.p == nullptr) throw Error("out of memory for a regex match");
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t last = 0, pos = 0;
  while (pos < text.size()) {
    const int rc = pcre2_match(as_code(code_), subject, text.size(), pos, PCRE2_NO_UTF_CHECK, md.p, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      throw Error("pre-tokenizer regex " + show_string(pattern_) + ": " + reinterpret_cast<const char*>(msg));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.p);
    const std::size_t b = ov[0], e = ov[1];
    if (e == b) {  // an empty match splits nothing: look again one character on
      pos = b + (b < text.size() ? utf8_char_len(text, b) : 1);
      continue;
    }
    if (b > last) out.emplace_back(base + last, base + b);
    out.emplace_back(base + b, base + e);
    last = pos = e;
  }
  if (last < text.size()) out.emplace_back(base + last, base + text.size());
}

PreTokenizer gguf_pre_tokenizer(const std::string& pre, const std::string& name) {
  auto is = [&](std::initializer_list<const char*> names) {
    return std::any_of(names.begin(), names.end(), [&](const char* n) { return pre == n; });
  };
  PreTokenizer p;
  if (is({"default"})) {
    p.regexes = {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2, "\\p{N}+", "[0-9][0-9][0-9]"};
  } else if (is({"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"})) {
    p.regexes = {kLlama3};
    p.ignore_merges = true;
    p.add_bos = true;
  } else if (is({"dbrx", "smaug-bpe"})) {
    p.regexes = {kLlama3};
  } else if (is({"deepseek-llm"})) {
    p.regexes = {"[\r\n]", kDeepseekLlmLetters,
                 "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+", "\\s+$",
                 kCjk, "\\p{N}+"};
  } else if (is({"deepseek-coder"})) {
    p.regexes = {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", kCjk, "\\p{N}"};
  } else if (is({"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v1-en", "jina-v2-es", "jina-v2-de",
                 "jina-v2-code", "roberta-bpe", "mpt", "olmo", "jais", "exaone4"})) {
    p.regexes = {kGpt2};
  } else if (is({"qwen2", "stablelm2", "megrez"})) {
    p.regexes = {kQwen2};
  } else if (is({"tekken"})) {
    p.regexes = {kTekken};
    p.ignore_merges = true;
    p.add_bos = true;
  } else {
    throw Error(name + ": pre-tokenizer " + show_string(pre) +
                " (tokenizer.ggml.pre) is not supported; lowp knows default, llama3/llama-bpe, gpt-2, "
                "deepseek-llm, deepseek-coder, qwen2, tekken and their aliases");
  }
  return p;
}

void BpeModel::encode(std::string_view text, std::vector<int>& out) const {
  if (const std::size_t bad = invalid_utf8_at(text); bad != std::string_view::npos)
    throw Error("the text is not valid UTF-8 at byte " + std::to_string(bad) + " (a byte-level BPE tokenizer needs UTF-8)");
  // Raw segments between user-defined tokens (the id, or -1 for text to tokenize).
  struct Seg {
    std::size_t begin, end;
    int id;
  };
  std::vector<Seg> segs{{0, text.size(), -1}};
  for (const auto& [tok, id] : user_tokens) {
    std::vector<Seg> next;
    for (const Seg& s : segs) {
      if (s.id >= 0) {
        next.push_back(s);
        continue;
      }
      std::size_t from = s.begin;
      while (true) {
        const std::size_t at = text.substr(0, s.end).find(tok, from);
        if (at == std::string_view::npos) break;
        if (at > from) next.push_back({from, at, -1});
        next.push_back({at, at + tok.size(), id});
        from = at + tok.size();
      }
      if (from < s.end) next.push_back({from, s.end, -1});
    }
    segs = std::move(next);
  }

  std::string norm, word;
  std::vector<std::pair<std::size_t, std::size_t>> pieces, next;
  struct Sym {
    int id, prev, next;
  };
  std::vector<Sym> sym;
  struct Cand {
    int rank, left, left_id, right_id, merged;
  };
  auto worse = [](const Cand& a, const Cand& b) { return a.rank > b.rank || (a.rank == b.rank && a.left > b.left); };
  std::vector<Cand> heap;

  for (const Seg& s : segs) {
    if (s.id >= 0) {
      out.push_back(s.id);
      continue;
    }
    std::string_view seg = text.substr(s.begin, s.end - s.begin);
    norm.clear();
    if (!prepend.empty() && !seg.empty() && (!prepend_first_only || s.begin == 0)) norm = prepend;
    if (add_prefix_space && !seg.empty() && seg[0] != ' ') norm += ' ';
    if (spaces_to_metaspace) {
      for (char c : seg) c == ' ' ? (void)(norm += kMetaspace) : (void)(norm += c);
    } else {
      norm.append(seg);
    }
    pieces.clear();
    pieces.emplace_back(0, norm.size());
    for (const auto& re : split) {
      next.clear();
      for (const auto& [b, e] : pieces) re->split(std::string_view(norm).substr(b, e - b), b, next);
      pieces.swap(next);
    }
    for (const auto& [b, e] : pieces) {
      const std::string_view w = std::string_view(norm).substr(b, e - b);
      if (w.empty()) continue;
      word.clear();
      if (byte_level) {
        for (char c : w) word += byte_char(static_cast<unsigned char>(c));
      } else {
        word.assign(w);
      }
      if (ignore_merges) {
        if (const int id = lookup(word); id >= 0) {
          out.push_back(id);
          continue;
        }
      }
      sym.clear();
      for (std::size_t i = 0; i < word.size();) {
        const std::size_t n = utf8_char_len(word, i);
        int id = lookup(std::string_view(word).substr(i, n));
        if (id >= 0) {
          sym.push_back({id, 0, 0});
        } else if (byte_fallback && std::all_of(word.begin() + i, word.begin() + i + n,
                                                [&](char c) { return byte_tokens[static_cast<unsigned char>(c)] >= 0; })) {
          for (std::size_t k = 0; k < n; ++k) sym.push_back({byte_tokens[static_cast<unsigned char>(word[i + k])], 0, 0});
        } else if (unk >= 0) {
          sym.push_back({unk, 0, 0});
        } else {
          throw Error("cannot encode " + show_string(word.substr(i, n)) + ": it is not in the vocabulary, which has no unknown token");
        }
        i += n;
      }
      const int ns = static_cast<int>(sym.size());
      for (int k = 0; k < ns; ++k) sym[k].prev = k - 1, sym[k].next = k + 1 < ns ? k + 1 : -1;
      heap.clear();
      auto consider = [&](int l) {
        if (l < 0 || sym[l].next < 0) return;
        const int r = sym[l].next;
        const auto key = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(sym[l].id)) << 32) |
                         static_cast<std::uint32_t>(sym[r].id);
        const auto it = merges.find(key);
        if (it == merges.end()) return;
        heap.push_back({it->second.first, l, sym[l].id, sym[r].id, it->second.second});
        std::push_heap(heap.begin(), heap.end(), worse);
      };
      for (int k = 0; k + 1 < ns; ++k) consider(k);
      while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), worse);
        const Cand c = heap.back();
        heap.pop_back();
        Sym& a = sym[c.left];
        if (a.id != c.left_id || a.next < 0 || sym[a.next].id != c.right_id) continue;  // stale
        Sym& b = sym[a.next];
        a.id = c.merged;
        b.id = -1;  // removed
        a.next = b.next;
        if (a.next >= 0) sym[a.next].prev = c.left;
        consider(a.prev);
        consider(c.left);
      }
      for (int k = 0; k >= 0 && k < ns; k = sym[k].next) out.push_back(sym[k].id);
    }
  }
}

std::string BpeModel::piece_bytes(const std::string& piece) const {
  std::string r;
  if (!byte_level) {
    for (std::size_t i = 0; i < piece.size(); ++i) {
      if (piece.compare(i, 3, kMetaspace) == 0) {
        r += ' ';
        i += 2;
      } else {
        r += piece[i];
      }
    }
    return r;
  }
  const auto& back = byte_table().back;
  for (std::size_t i = 0; i < piece.size();) {
    const std::size_t n = utf8_char_len(piece, i);
    unsigned cp = static_cast<unsigned char>(piece[i]);
    if (n > 1) {
      cp &= 0xFFu >> (n + 1);
      for (std::size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(piece[i + k]) & 0x3F);
    }
    const auto it = back.find(cp);
    if (it != back.end()) r += static_cast<char>(it->second);
    else r.append(piece, i, n);
    i += n;
  }
  return r;
}

Tokenizer TokenizerBuilder::bpe(std::vector<std::string> pieces, std::vector<Tokenizer::TokenType> types, int bos, int eos,
                                std::shared_ptr<const BpeModel> model, bool add_bos) {
  const int n = static_cast<int>(pieces.size());
  if (n == 0) throw Error(model->name + ": the vocabulary is empty");
  for (auto [id, what] : {std::pair{bos, "bos"}, std::pair{eos, "eos"}, std::pair{model->unk, "unknown"}})
    if (id < -1 || id >= n)
      throw Error(model->name + ": " + what + " token id " + std::to_string(id) + " is outside the vocabulary (" +
                  std::to_string(n) + " tokens)");
  Tokenizer t;
  t.pieces_ = std::move(pieces);
  t.types_ = std::move(types);
  t.scores_.assign(t.pieces_.size(), 0.0f);
  t.bos_ = bos;
  t.eos_ = eos;
  t.unk_ = model->unk;
  t.add_bos_ = add_bos;
  t.space_prefix_ = !model->prepend.empty();
  t.byte_ids_.fill(-1);
  for (int b = 0; b < 256; ++b) {
    const int id = model->byte_tokens[b];
    if (id < 0) continue;
    t.byte_ids_[b] = id;
    t.types_[id] = Tokenizer::TokenType::byte;
  }
  t.bpe_ = std::move(model);
  return t;
}

}  // namespace lowp::accuracy::detail
