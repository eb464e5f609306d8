// tokenizer.json [NUL tokenizer_config.json] -> load_hf_tokenizer -> encode a fixed text -> decode.
#include "fuzz_files.hpp"
#include "fuzz_support.hpp"
#include "lowp/accuracy/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return lowp::fuzz::guarded([&] {
    const auto& dir = lowp::fuzz::scratch_dir("tokenizer_json");
    const auto in = lowp::fuzz::split_at_nul(lowp::fuzz::text(data, size));
    lowp::fuzz::write_file(dir / "tokenizer.json", in.first);
    if (in.has_second) lowp::fuzz::write_file(dir / "tokenizer_config.json", in.second);
    else std::filesystem::remove(dir / "tokenizer_config.json");
    const auto tok = lowp::accuracy::load_hf_tokenizer((dir / "tokenizer.json").string());
    const auto ids = tok.encode("Once upon a time, the 12,345 \xce\xbb caf\xc3\xa9 <custom><s>\n\t ", true, true);
    (void)tok.decode(ids);
    for (std::size_t i = 1; i < ids.size(); ++i) (void)tok.decode_token(ids[i - 1], ids[i]);
  });
}
