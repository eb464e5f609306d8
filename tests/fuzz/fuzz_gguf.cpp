// GGUF model bytes -> load -> prepare -> 4-token forward.
#include "fuzz_support.hpp"
#include "lowp/accuracy/loaders.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return lowp::fuzz::guarded([&] {
    lowp::fuzz::short_forward(lowp::accuracy::load_gguf_bytes(lowp::fuzz::bytes(data, size), "fuzz.gguf"));
  });
}
