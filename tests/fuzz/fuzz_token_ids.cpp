// A token-id file -> parse (vocabulary 512) -> evaluate the ids on a fixed small model.
#include "fuzz_model.hpp"
#include "fuzz_support.hpp"
#include "lowp/accuracy/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return lowp::fuzz::guarded([&] {
    auto ids = lowp::accuracy::parse_token_ids(lowp::fuzz::text(data, size), 512, "ids.txt");
    if (ids.size() > 64) ids.resize(64);  // one window of the model's seq_len
    lowp::accuracy::EvalOptions opt;
    opt.threads = 1;
    lowp::accuracy::evaluate(lowp::fuzz::fixed_model(), ids, lowp::accuracy::find_recipe("fp32"), opt);
  });
}
