// Crash safety of `lowp train` (issue 14): the real program is killed with SIGKILL at seeded
// random moments, some of them while state.bin's temporary file is written but not yet renamed
// (LOWP_TRAIN_SAVE_PAUSE_MS holds it there), and `--resume`d each time. Each resume must continue
// from the last complete checkpoint, and the end result must be bitwise the uninterrupted run's.
// A truncated, a bit-flipped and an empty state.bin are refused with one line, exit 1.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "train/checkpoint.hpp"
#include "train_files.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kSteps = 30, kSaveEvery = 3;

fs::path temp_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("lowp_test_train_kill_" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d.parent_path());
  return d;
}

using lowp::test::log_without_speed;
using lowp::test::slurp;

fs::path corpus() { return lowp::test::train_corpus(); }

std::vector<std::string> fresh_args(const fs::path& corpus, const fs::path& out) {
  return {"train", "--corpus", corpus.string(), "--config", "tiny", "--ctx", "32", "--batch", "4", "--recipe",
          "fp8-delayed", "--seed", "11", "--eval-every", "4", "--save-every", std::to_string(kSaveEvery), "--steps",
          std::to_string(kSteps), "--threads", "1", "--out", out.string()};
}
std::vector<std::string> resume_args(const fs::path& out) {
  return {"train", "--resume", out.string(), "--steps", std::to_string(kSteps), "--threads", "1"};
}

// Starts `lowp args...` with stdout and stderr into files; the pause makes each state.bin
// write hold its complete temporary file for that long before the rename.
pid_t spawn(const std::vector<std::string>& args, const fs::path& out, const fs::path& err, int pause_ms) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (!std::freopen(out.c_str(), "w", stdout) || !std::freopen(err.c_str(), "w", stderr)) ::_exit(126);
    if (pause_ms > 0) ::setenv("LOWP_TRAIN_SAVE_PAUSE_MS", std::to_string(pause_ms).c_str(), 1);
    std::vector<char*> argv = {const_cast<char*>(LOWP_CLI_PATH)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(LOWP_CLI_PATH, argv.data());
    ::_exit(127);
  }
  return pid;
}

struct Exit {
  bool killed = false;
  int code = -1;
};
Exit decode(int status) {
  Exit e;
  if (WIFSIGNALED(status)) e.killed = WTERMSIG(status) == SIGKILL;
  if (WIFEXITED(status)) e.code = WEXITSTATUS(status);
  return e;
}
Exit reap(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return decode(status);
}

// A child that may end on its own while the test waits to kill it.
struct Child {
  pid_t pid;
  bool ended = false;
  int status = 0;
  bool running() {
    if (!ended && ::waitpid(pid, &status, WNOHANG) == pid) ended = true;
    return !ended;
  }
  Exit finish(bool kill) {
    if (running() && kill) ::kill(pid, SIGKILL);
    if (!ended) ::waitpid(pid, &status, 0);
    ended = true;
    return decode(status);
  }
};

// The steps a process printed ("step K/N ..."), in order.
std::vector<int> printed_steps(const fs::path& out) {
  std::vector<int> steps;
  std::ifstream f(out);
  for (std::string line; std::getline(f, line);)
    if (line.rfind("step ", 0) == 0 && !f.eof()) steps.push_back(std::atoi(line.c_str() + 5));
  return steps;
}

// The optimizer step a state.bin holds: the optimizer's bytes are its magic, the moment and
// master formats, then the step count (train/optimizer.cpp, Optimizer::save).
int checkpoint_step(const fs::path& state) {
  const auto bytes = lowp::accuracy::train::read_state_file(state.string());
  const auto st = lowp::accuracy::train::decode_state(bytes, state.string());
  std::uint64_t t = 0;
  if (st.optimizer.size() < 32) return -1;
  std::memcpy(&t, st.optimizer.data() + 24, 8);
  return static_cast<int>(t);
}

TEST(TrainKill, SigkillAtRandomMomentsThenResumeEndsBitwiseIdentical) {
  const fs::path c = corpus(), ref = temp_dir("ref"), run = temp_dir("run"), logs = temp_dir("logs");
  fs::create_directories(logs);
  const auto t0 = Clock::now();
  const Exit r = reap(spawn(fresh_args(c, ref), logs / "ref.out", logs / "ref.err", 0));
  ASSERT_EQ(r.code, 0) << slurp(logs / "ref.err");
  const double ref_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();

  std::mt19937 rng(20261124);
  constexpr int kPauseMs = 40;
  int kills = 0, kills_mid_write = 0, fresh_starts = 0, attempt = 0;
  for (bool done = false; !done; ++attempt) {
    ASSERT_LT(attempt, 80) << "the run does not finish";
    const bool resume = fs::exists(run / "state.bin");
    int before = -1;
    if (resume) {
      before = checkpoint_step(run / "state.bin");  // throws (fails the test) on a torn file
      EXPECT_EQ(before % kSaveEvery == 0 || before == kSteps, true) << "state.bin at step " << before;
    } else {
      fs::remove_all(run);  // no complete checkpoint yet: start over
      ++fresh_starts;
    }
    const fs::path out = logs / ("a" + std::to_string(attempt) + ".out"), err = logs / ("a" + std::to_string(attempt) + ".err");
    // A previous kill's state.bin.tmp would look like a write under way (lowp overwrites it).
    if (attempt % 2 == 1) fs::remove(run / "state.bin.tmp");
    Child child{spawn(resume ? resume_args(run) : fresh_args(c, run), out, err, kPauseMs)};
    // Even attempts: a random moment of what is left of the run; odd ones: while the k-th
    // state.bin.tmp waits for its rename. Once there were enough kills, the run ends.
    const int left = kSteps - std::max(before, 0);
    const bool kill = kills < 12 || kills_mid_write < 3;
    bool mid_write = false;
    if (kill && attempt % 2 == 0) {
      const auto wait = std::chrono::duration<double, std::milli>(
          std::uniform_real_distribution<double>(0.05, 0.6)(rng) * ref_ms * left / kSteps);
      const auto until = Clock::now() + wait;
      while (Clock::now() < until && child.running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    } else if (kill) {
      int seen = 0, want = std::uniform_int_distribution<int>(1, std::clamp(left / kSaveEvery - 1, 1, 3))(rng);
      bool was = false;
      while (child.running()) {
        const bool is = fs::exists(run / "state.bin.tmp");
        if (is && !was && ++seen == want) {
          mid_write = true;
          break;
        }
        was = is;
        std::this_thread::sleep_for(std::chrono::microseconds(500));
      }
    }
    const Exit e = child.finish(kill);
    // Mid-write only if the temporary file outlived the process (a loaded machine may have let
    // the rename happen between the poll and the kill).
    mid_write = mid_write && e.killed && fs::exists(run / "state.bin.tmp");
    const std::vector<int> steps = printed_steps(out);
    if (resume && !steps.empty()) {
      EXPECT_EQ(steps.front(), before + 1) << "attempt " << attempt << " did not continue from state.bin";
    }
    if (e.killed) {
      ++kills;
      kills_mid_write += mid_write;
      if (fs::exists(run / "state.bin") && !steps.empty()) {
        // The last checkpoint this process reported (progress prints after the save) survived;
        // at most the next one was completed after that.
        const int printed = steps.back(), got = checkpoint_step(run / "state.bin");
        EXPECT_GE(got, printed - printed % kSaveEvery) << "attempt " << attempt << " lost a complete checkpoint";
        EXPECT_LE(got, printed - printed % kSaveEvery + kSaveEvery) << "attempt " << attempt;
        if (mid_write) {
          EXPECT_LE(got, printed) << "a checkpoint still in its temporary file was taken as complete";
        }
      }
    } else {
      ASSERT_EQ(e.code, 0) << "attempt " << attempt << ": " << slurp(err);
      done = !kill;
      if (!done) fs::remove_all(run);  // finished before its kill (a busy machine): again, from scratch
    }
  }
  std::printf("%d kills (%d while state.bin.tmp waited for its rename), %d fresh starts, %d attempts; uninterrupted run %.0f ms\n",
              kills, kills_mid_write, fresh_starts, attempt, ref_ms);
  EXPECT_GE(kills_mid_write, 3);
  EXPECT_EQ(log_without_speed(ref), log_without_speed(run));
  for (const char* f : {"state.bin", "model.bin", "model.gguf", "model.safetensors", "config.json", "quant.csv", "train.cfg"})
    EXPECT_TRUE(slurp(ref / f) == slurp(run / f)) << f << " differs from the uninterrupted run's";
  fs::remove_all(fs::temp_directory_path() / ("lowp_test_train_kill_" + std::to_string(::getpid())));
}

TEST(TrainKill, TornOrCorruptedStateIsRefusedWithOneLine) {
  const fs::path c = corpus(), good = temp_dir("good"), logs = temp_dir("logs2");
  fs::create_directories(logs);
  std::vector<std::string> args = fresh_args(c, good);
  args[std::find(args.begin(), args.end(), "--steps") - args.begin() + 1] = "3";
  ASSERT_EQ(reap(spawn(args, logs / "g.out", logs / "g.err", 0)).code, 0) << slurp(logs / "g.err");
  const std::string state = slurp(good / "state.bin");
  ASSERT_GT(state.size(), 1000u);
  std::string flipped = state;
  flipped[flipped.size() / 2] ^= 0x10;
  const struct {
    const char* name;
    std::string bytes;
    const char* says;
  } cases[] = {{"truncated", state.substr(0, state.size() * 2 / 3), "truncated"},
               {"bit-flipped", flipped, "checksum mismatch"},
               {"empty", "", "empty"},
               {"torn header", state.substr(0, 12), "truncated"}};
  for (const auto& k : cases) {
    const fs::path dir = temp_dir(std::string("bad-") + k.name);
    fs::create_directories(dir);
    for (const char* f : {"train.cfg", "log.csv", "quant.csv"}) fs::copy_file(good / f, dir / f);
    std::ofstream(dir / "state.bin", std::ios::binary) << k.bytes;
    const Exit e = reap(spawn(resume_args(dir), logs / "b.out", logs / "b.err", 0));
    const std::string err = slurp(logs / "b.err");
    EXPECT_EQ(e.code, 1) << k.name << ": " << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << k.name << ": " << err;
    EXPECT_NE(err.find((dir / "state.bin").string()), std::string::npos) << k.name << ": " << err;
    EXPECT_NE(err.find(k.says), std::string::npos) << k.name << ": " << err;
    EXPECT_EQ(slurp(logs / "b.out"), "") << k.name;
    EXPECT_EQ(slurp(dir / "log.csv"), slurp(good / "log.csv")) << k.name << ": log.csv changed by a refused resume";
  }
}

}  // namespace
