// The checkpoints `lowp train` keeps in DIR (private): the exports a user reads (model.bin,
// model.gguf, model.safetensors + config.json, the tokenizer's files) and state.bin, which a
// resume reads (train/checkpoint.hpp's encoding).
#pragma once
#include <string>
#include <vector>

#include "optim/optimizer.hpp"
#include "train/export_tokenizer.hpp"
#include "train/train_model.hpp"

namespace lowp::accuracy::train {

class CheckpointDir {
 public:
  // `export_seq_len` > 0: the context the exports declare (--init: the checkpoint's own).
  CheckpointDir(std::string dir, TokenizerExport tokenizer, int export_seq_len)
      : dir_(std::move(dir)), tokenizer_(std::move(tokenizer)), export_seq_len_(export_seq_len) {}

  // model.gguf and model.safetensors + config.json always (unless config.json cannot hold the
  // architecture), model.bin where llama2.c's format can hold it; what is skipped is added to
  // `notes` once. The tokenizer goes into model.gguf and its files beside the others.
  void write_exports(const TrainModel& net, std::vector<std::string>& notes) const;

  // The exports first, then state.bin: a kill in between leaves exports newer than state.bin,
  // which a resume rewrites.
  void save(TrainModel& net, const lowp::train::Optimizer& opt, std::vector<std::string>& notes) const;

  // Reads state.bin into `net` and `opt`; everything is checked before anything is loaded, so a
  // refused file leaves no half-loaded run. Throws lowp::Error naming the file.
  void load(TrainModel& net, lowp::train::Optimizer& opt) const;

 private:
  std::string dir_;
  TokenizerExport tokenizer_;
  int export_seq_len_ = 0;
};

}  // namespace lowp::accuracy::train
