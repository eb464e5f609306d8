// save_config / load_config (run_config.hpp): DIR/train.cfg.
#include "train/run_config.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "file/atomic_file.hpp"
#include "lowp/numerics/error.hpp"
#include "recipe/key_value.hpp"
#include "train/train_log.hpp"

namespace lowp::accuracy::train {

namespace fs = std::filesystem;

void save_config(const TrainOptions& o) {
  const LlamaConfig& c = o.config;
  std::ostringstream s;
  s << "corpus = " << fs::absolute(o.corpus).string() << "\nrecipe = " << o.recipe << "\nseed = " << o.seed
    << "\ndim = " << c.dim << "\nhidden = " << c.hidden_dim << "\nlayers = " << c.n_layers << "\nheads = "
    << c.n_heads << "\nkv_heads = " << c.n_kv_heads << "\nvocab = " << c.vocab_size << "\nctx = " << c.seq_len
    << "\nbatch = " << o.batch << "\nlr = " << log_number(o.lr) << "\nwarmup = " << o.warmup << "\nmin_lr_ratio = "
    << log_number(o.min_lr_ratio) << "\ngrad_clip = " << log_number(o.grad_clip) << "\neval_every = " << o.eval_every
    << "\nsave_every = " << o.save_every << "\nval_windows = " << o.val_windows << "\ntied = " << o.tied << "\nmicro_batch = " << o.micro_batch
    << "\ngrad_comm = " << o.grad_comm << "\n";
  if (!o.init.empty()) s << "init = " << o.init << "\n";
  detail::write_file_atomic((fs::path(o.out) / "train.cfg").string(), s.str());
}

TrainOptions load_config(const std::string& dir, TrainOptions o) {
  const std::string path = (fs::path(dir) / "train.cfg").string();
  std::ifstream f(path);
  if (!f) throw Error("--resume " + dir + ": no train.cfg (not a lowp train output directory)");
  std::ostringstream text;
  text << f.rdbuf();
  std::map<std::string, std::string> kv;
  accuracy::detail::read_key_values(text.str(), path, [&](std::string_view k, std::string_view v) {
    kv[std::string(k)] = v;
    return std::string();
  });
  const auto get = [&](const char* k) {
    if (!kv.count(k)) throw Error(path + ": '" + k + "' is missing");
    return kv[k];
  };
  try {
    o.corpus = get("corpus");
    o.recipe = get("recipe");
    o.seed = std::stoull(get("seed"));
    o.config.dim = std::stoi(get("dim"));
    o.config.hidden_dim = std::stoi(get("hidden"));
    o.config.n_layers = std::stoi(get("layers"));
    o.config.n_heads = std::stoi(get("heads"));
    o.config.n_kv_heads = std::stoi(get("kv_heads"));
    o.config.vocab_size = std::stoi(get("vocab"));
    o.config.seq_len = std::stoi(get("ctx"));
    o.batch = std::stoi(get("batch"));
    o.lr = std::stod(get("lr"));
    o.warmup = std::stoi(get("warmup"));
    o.min_lr_ratio = std::stod(get("min_lr_ratio"));
    o.grad_clip = std::stod(get("grad_clip"));
    o.eval_every = std::stoi(get("eval_every"));
    o.save_every = std::stoi(get("save_every"));
    o.val_windows = std::stoi(get("val_windows"));
    o.tied = get("tied") == "1";
    if (kv.count("micro_batch")) o.micro_batch = std::stoi(kv["micro_batch"]);  // absent before data parallelism
    if (kv.count("grad_comm")) o.grad_comm = kv["grad_comm"];
    if (kv.count("init")) o.init = kv["init"];
  } catch (const std::logic_error&) {
    throw Error(path + ": a value does not parse");
  }
  o.out = dir;
  return o;
}

}  // namespace lowp::accuracy::train
