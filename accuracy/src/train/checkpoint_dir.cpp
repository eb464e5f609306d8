// CheckpointDir (checkpoint_dir.hpp): the exports and state.bin of a `lowp train` run.
#include "train/checkpoint_dir.hpp"

#include <algorithm>
#include <filesystem>
#include <span>

#include "io/save_model.hpp"
#include "lowp/numerics/error.hpp"
#include "train/checkpoint.hpp"

namespace lowp::accuracy::train {

namespace fs = std::filesystem;

void CheckpointDir::write_exports(const TrainModel& net, std::vector<std::string>& notes) const {
  LlamaModel m = net.to_model();
  if (export_seq_len_ > 0) m.config.seq_len = export_seq_len_;  // --init: the model's own context
  const fs::path dir(dir_);
  const auto note = [&](const std::string& line) {
    if (std::find(notes.begin(), notes.end(), line) == notes.end()) notes.push_back(line);
  };
  if (const std::string why = detail::llama2c_cannot_hold(m); why.empty())
    detail::save_llama2c(m, (dir / "model.bin").string());
  else
    note("model.bin not written: llama2.c's format cannot hold " + why);
  detail::save_gguf(m, (dir / "model.gguf").string(), tokenizer_.gguf);
  write_tokenizer_files(tokenizer_, dir_);
  if (m.config.rope_freq_factors.empty())
    detail::save_safetensors(m, (dir / "model.safetensors").string());
  else
    note("model.safetensors not written: config.json cannot hold RoPE frequency factors");
}

void CheckpointDir::save(TrainModel& net, const lowp::train::Optimizer& opt, std::vector<std::string>& notes) const {
  write_exports(net, notes);
  std::vector<std::span<const float>> tensors;
  for (const auto& p : net.params()) tensors.emplace_back(p.value, p.size);
  const auto o = opt.save(), lin = net.save_linear_state();
  write_state_file((fs::path(dir_) / "state.bin").string(), encode_state(tensors, o, lin));
}

void CheckpointDir::load(TrainModel& net, lowp::train::Optimizer& opt) const {
  const std::string path = (fs::path(dir_) / "state.bin").string();
  if (!fs::exists(path)) throw Error("--resume " + dir_ + ": no state.bin (no checkpoint was saved)");
  TrainState st = decode_state(read_state_file(path), path);
  const auto params = net.params();
  if (st.tensors.size() != params.size())
    throw Error(path + ": " + std::to_string(st.tensors.size()) + " tensors, the model of train.cfg has " +
                std::to_string(params.size()) + " (not a state of this model)");
  for (std::size_t i = 0; i < params.size(); ++i)
    if (st.tensors[i].size() != params[i].size)
      throw Error(path + ": tensor " + params[i].name + " holds " + std::to_string(st.tensors[i].size()) +
                  " values, the model of train.cfg has " + std::to_string(params[i].size) + " (not a state of this model)");
  try {
    opt.load(st.optimizer, optimizer_tensors(net));
    net.load_linear_state(st.linears);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  for (std::size_t i = 0; i < params.size(); ++i) std::copy(st.tensors[i].begin(), st.tensors[i].end(), params[i].value);
  net.weights_changed();
}

}  // namespace lowp::accuracy::train
