// llama2.c tokenizer.bin (read for a 512-token model, as stories260K's) -> encode -> decode.
#include "fuzz_support.hpp"
#include "lowp/accuracy/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return lowp::fuzz::guarded([&] {
    const auto tok = lowp::accuracy::load_llama2c_tokenizer_bytes(lowp::fuzz::bytes(data, size), 512, "tokenizer.bin");
    const auto ids = tok.encode("Once upon a time, \xce\xbb caf\xc3\xa9 <s>\n\t 123", true, true);
    (void)tok.decode(ids);
    for (std::size_t i = 1; i < ids.size(); ++i) (void)tok.decode_token(ids[i - 1], ids[i]);
  });
}
