// DIR/train.cfg (private): the options of a `lowp train` run that a resume takes over, one
// `key = value` a line.
#pragma once
#include <string>

#include "train/trainer.hpp"

namespace lowp::accuracy::train {

// Writes o.out/train.cfg (the corpus as an absolute path).
void save_config(const TrainOptions& o);

// `o` with dir/train.cfg's options and out = dir. Throws lowp::Error naming the file when it is
// absent, lacks a key or a value does not parse.
TrainOptions load_config(const std::string& dir, TrainOptions o);

}  // namespace lowp::accuracy::train
