// A GGUF vocabulary -> tokenizer -> encode a fixed text -> decode the ids and each token.
#include "fuzz_support.hpp"
#include "lowp/accuracy/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return lowp::fuzz::guarded([&] {
    const auto tok = lowp::accuracy::load_gguf_tokenizer_bytes(lowp::fuzz::bytes(data, size), "fuzz.gguf");
    const auto ids = tok.encode("Once upon a time, \xce\xbb caf\xc3\xa9 <s>\n\t 123", true, true);
    (void)tok.decode(ids);
    for (std::size_t i = 1; i < ids.size(); ++i) (void)tok.decode_token(ids[i - 1], ids[i]);
  });
}
