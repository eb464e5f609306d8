// Evaluation recipe text -> parse -> prepare and a 4-token forward of a fixed small model.
#include "fuzz_model.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return lowp::fuzz::guarded([&] {
    const lowp::accuracy::Recipe r = lowp::accuracy::parse_recipe(lowp::fuzz::text(data, size));
    (void)lowp::accuracy::to_text(r);
    lowp::fuzz::short_forward(lowp::fuzz::fixed_model(), r);
  });
}
