// `lowp generate`: greedy continuation as llama2.c's run.c prints it, and its errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "cli/cli_run.hpp"
#include "lowp/accuracy/memory.hpp"

namespace {

using lowp::test::lowp_run;
const std::string kShared = LOWP_SHARED_DIR;

// ../shared/models/tinyllamas/stories260K_greedy.txt is run.c's own output for `-t 0 -n 256`.
TEST(Generate, GreedyFromBosIsRunCsOutput) {
  const std::string model = kShared + "/models/tinyllamas/stories260K.bin",
                    ref = kShared + "/models/tinyllamas/stories260K_greedy.txt";
  if (!std::filesystem::exists(model) || !std::filesystem::exists(ref))
    GTEST_SKIP() << "../shared/models/tinyllamas is absent";
  std::ifstream f(ref, std::ios::binary);
  const std::string want((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto r = lowp_run({"generate", "--model", model, "--max-tokens", "256", "--temperature", "0"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, want);
}

TEST(Generate, ShakespeareContinuesAPromptTheSameWayTwice) {
  const auto a = lowp_run({"generate", "--model", "shakespeare", "--prompt", "ROMEO:", "--max-tokens", "40"});
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.out.rfind("ROMEO:", 0), 0u) << a.out;
  EXPECT_EQ(a.out.size(), 6u + 40u + 1u) << a.out;  // prompt, 40 byte tokens, newline
  EXPECT_EQ(lowp_run({"generate", "--model", "shakespeare", "--prompt", "ROMEO:", "--max-tokens", "40"}).out, a.out);
  // Sampling: the seed decides.
  const auto s1 = lowp_run({"generate", "--model", "shakespeare", "--max-tokens", "30", "--temperature", "1", "--seed", "3"});
  const auto s2 = lowp_run({"generate", "--model", "shakespeare", "--max-tokens", "30", "--temperature", "1", "--seed", "3"});
  ASSERT_EQ(s1.code, 0) << s1.err;
  EXPECT_EQ(s1.out, s2.out);
}

TEST(Generate, BadInputsFailWithOneLine) {
  const auto r1 = lowp_run({"generate", "--model", "/nonexistent/m.bin"});
  EXPECT_EQ(r1.code, 1);
  EXPECT_NE(r1.err.find("lowp generate: "), std::string::npos) << r1.err;
  const auto r2 = lowp_run({"generate", "--model", "shakespeare", "--temperature", "-1"});
  EXPECT_EQ(r2.code, 2);
  EXPECT_NE(r2.err.find("--temperature"), std::string::npos) << r2.err;
  const auto r3 = lowp_run({"generate", "--model", "shakespeare", "--recipe", "nope"});
  EXPECT_EQ(r3.code, 2);
  EXPECT_NE(r3.err.find("nope"), std::string::npos) << r3.err;
  // The weights (3.3 MiB) fit, the KV cache (4 layers x 128 positions x 2 KV heads x 32 x 2
  // floats, 256 KiB) does not: one line naming it.
  const auto r4 = lowp_run({"generate", "--model", "shakespeare", "--max-memory", "3.4M"});
  lowp::accuracy::set_max_memory(0);  // --max-memory sets the process's budget: later tests get the default back
  EXPECT_EQ(r4.code, 1);
  EXPECT_EQ(r4.err.find('\n'), r4.err.size() - 1) << r4.err;
  EXPECT_NE(r4.err.find("KV cache of 128 positions x 4 layers"), std::string::npos) << r4.err;
  EXPECT_NE(r4.err.find("(--max-memory)"), std::string::npos) << r4.err;
}

}  // namespace
