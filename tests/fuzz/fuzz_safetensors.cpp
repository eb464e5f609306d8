// config.json text, a NUL byte, then safetensors bytes -> load -> prepare -> 4-token forward.
// (Valid JSON holds no raw NUL, so the split is unambiguous; no NUL: all of it is config.json.)
#include <cstring>

#include "fuzz_support.hpp"
#include "lowp/accuracy/loaders.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return lowp::fuzz::guarded([&] {
    const auto* nul = static_cast<const std::uint8_t*>(std::memchr(data, 0, size));
    const std::size_t cfg = nul ? static_cast<std::size_t>(nul - data) : size;
    const std::size_t rest = nul ? cfg + 1 : size;
    lowp::fuzz::short_forward(lowp::accuracy::load_safetensors_bytes(
        lowp::fuzz::bytes(data + rest, size - rest), lowp::fuzz::text(data, cfg), "fuzz.safetensors"));
  });
}
