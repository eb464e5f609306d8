// A recipe byte, then state.bin bytes -> `lowp train --resume` of a micro model (dim 8, 1 layer,
// vocab 258, window 8) to step 4: the checkpoint reader (train/checkpoint.cpp), the optimizer's
// and the linears' state readers, a step and a checkpoint. Each input runs twice: as it is, and
// with the header's length and CRC-32 recomputed, so that mutations get past the checksum to the
// structure behind it.
#include <zlib.h>

#include <cstring>

#include "fuzz_files.hpp"
#include "fuzz_support.hpp"
#include "train/trainer.hpp"

namespace {

// The recipes the committed seeds were trained with (one seed each; a byte picks one).
constexpr const char* kRecipes[] = {"fp32", "fp8-delayed", "bf16-pure-sr", "switchback-int8"};

void resume(const std::filesystem::path& dir, const char* recipe, std::string_view state) {
  using namespace lowp::accuracy::train;
  lowp::fuzz::write_file(dir / "train.cfg", "corpus = " + (dir / "corpus.txt").string() + "\nrecipe = " + recipe +
                                                "\nseed = 5\ndim = 8\nhidden = 16\nlayers = 1\nheads = 2\nkv_heads = 1\n"
                                                "vocab = 258\nctx = 8\nbatch = 2\nlr = 0.001\nwarmup = 0\nmin_lr_ratio = 0.1\n"
                                                "grad_clip = 1\neval_every = 2\nsave_every = 2\nval_windows = 2\ntied = 1\n");
  lowp::fuzz::write_file(dir / "state.bin", state);
  TrainOptions o;
  o.out = dir.string();
  o.steps = 4;
  o.threads = 1;
  run_training(o, true, nullptr);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const auto& dir = lowp::fuzz::scratch_dir("train_state");
  static const bool corpus = [&] {
    std::string text;
    for (int i = 0; i < 40; ++i) text += "the quick brown fox jumps over a lazy dog. ";
    lowp::fuzz::write_file(dir / "corpus.txt", text);
    return true;
  }();
  (void)corpus;
  const char* recipe = kRecipes[data[0] % std::size(kRecipes)];
  const std::string_view state = lowp::fuzz::text(data + 1, size - 1);
  lowp::fuzz::guarded([&] { resume(dir, recipe, state); });
  if (state.size() >= 20) {
    std::string fixed(state);
    const std::uint64_t n = fixed.size() - 20;
    const auto crc = static_cast<std::uint32_t>(
        crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(fixed.data() + 20), static_cast<uInt>(n)));
    std::memcpy(fixed.data() + 8, &n, 8);
    std::memcpy(fixed.data() + 16, &crc, 4);
    lowp::fuzz::guarded([&] { resume(dir, recipe, fixed); });
  }
  return 0;
}
