// Links the installed lowp: 1000 encodes to 0x64 in float8_e5m2 (it rounds to 1024 = 2^10,
// biased exponent 25, so code 25 << 2), and the installed `lowp` program is there.
#include <cstdint>
#include <cstdio>
#include <filesystem>

#include "lowp/formats/codec.hpp"
#include "lowp/formats/registry.hpp"

int main() {
  const lowp::Format e5m2 = lowp::parse_format("float8_e5m2");
  const std::uint32_t code = lowp::encode(e5m2, 1000.0f);
  if (code != 0x64 || lowp::decode(e5m2, code) != 1024.0) {
    std::fprintf(stderr, "consumer: 1000 -> e5m2 gave 0x%x, expected 0x64\n", code);
    return 1;
  }
  if (!std::filesystem::is_regular_file(LOWP_CLI_PATH)) {
    std::fprintf(stderr, "consumer: the installed lowp program %s is missing\n", LOWP_CLI_PATH);
    return 1;
  }
  std::printf("consumer: 1000 -> float8_e5m2 = 0x%02x; %s present\n", code, LOWP_CLI_PATH);
  return 0;
}
