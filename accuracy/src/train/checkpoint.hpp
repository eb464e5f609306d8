// DIR/state.bin of `lowp train` (private): the weights, the optimizer and the linears' state a
// --resume continues from. Layout: the magic "LOWPTRN3", the payload's length (u64) and its
// zlib CRC-32 (u32), then the payload: the tensor count (u64), per parameter tensor its value count (u64) and float32
// values, then the optimizer's bytes and the linears' state, each after its length (u64).
// Little-endian. The checksum makes a torn or corrupted file a refusal before anything loads.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace lowp::accuracy::train {

struct TrainState {
  std::vector<std::vector<float>> tensors;  // in the order of TrainLlama::params()
  std::vector<std::uint8_t> optimizer;      // lowp::train::Optimizer::save()
  std::vector<std::uint8_t> linears;        // TrainLlama::save_linear_state()
};

std::vector<std::uint8_t> encode_state(std::span<const std::span<const float>> tensors,
                                        std::span<const std::uint8_t> optimizer, std::span<const std::uint8_t> linears);

// Checks magic, length and checksum, then the structure; throws lowp::Error "NAME: what is
// wrong" (one line) without returning anything partial.
TrainState decode_state(std::span<const std::uint8_t> bytes, const std::string& name);

// Writes PATH.tmp, then renames it over PATH (a kill leaves the old file or the new one). The
// environment variable LOWP_TRAIN_SAVE_PAUSE_MS (tests only) sleeps that long in between, so a
// test can kill the process while the temporary file is complete but not yet renamed.
void write_state_file(const std::string& path, std::span<const std::uint8_t> bytes);
// The file's bytes; lowp::Error when it cannot be read.
std::vector<std::uint8_t> read_state_file(const std::string& path);

}  // namespace lowp::accuracy::train
