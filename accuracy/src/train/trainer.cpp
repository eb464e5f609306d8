// run_training(): the loop of `lowp train`.
#include "train/trainer.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>

#include "dist/comm.hpp"
#include "file/atomic_file.hpp"
#include "io/save_model.hpp"
#include "lowp/accuracy/loaders.hpp"
#include "lowp/accuracy/tokenizer.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/numerics/rng.hpp"
#include "lowp/quant/linear.hpp"
#include "optim/optimizer.hpp"
#include "recipe/key_value.hpp"
#include "recipe/train_recipe.hpp"
#include "train/checkpoint.hpp"
#include "train/data_parallel.hpp"
#include "train/export_tokenizer.hpp"
#include "train/llama_train.hpp"
#include "train/scalify_llama.hpp"

namespace lowp::accuracy::train {
namespace {

namespace fs = std::filesystem;

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open corpus '" + path + "'");
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

std::string num(double v) {
  if (std::isnan(v)) return "";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// DIR/train.cfg: the options a resumed run takes over, one `key = value` a line.
void save_config(const TrainOptions& o) {
  const LlamaConfig& c = o.config;
  std::ostringstream s;
  s << "corpus = " << fs::absolute(o.corpus).string() << "\nrecipe = " << o.recipe << "\nseed = " << o.seed
    << "\ndim = " << c.dim << "\nhidden = " << c.hidden_dim << "\nlayers = " << c.n_layers << "\nheads = "
    << c.n_heads << "\nkv_heads = " << c.n_kv_heads << "\nvocab = " << c.vocab_size << "\nctx = " << c.seq_len
    << "\nbatch = " << o.batch << "\nlr = " << num(o.lr) << "\nwarmup = " << o.warmup << "\nmin_lr_ratio = "
    << num(o.min_lr_ratio) << "\ngrad_clip = " << num(o.grad_clip) << "\neval_every = " << o.eval_every
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

// The optimizer of the recipe (master and moment formats, AdamW or StableAdamW) with the run's
// schedule and clipping.
lowp::train::OptimizerConfig optimizer_config(const TrainOptions& o, const lowp::train::TrainRecipe& r) {
  lowp::train::OptimizerConfig c;
  c.schedule.lr = o.lr;
  c.schedule.warmup_steps = static_cast<std::size_t>(o.warmup);
  c.schedule.total_steps = static_cast<std::size_t>(o.steps);
  c.schedule.min_lr_ratio = o.min_lr_ratio;
  c.clip_norm = o.grad_clip;
  c.seed = o.seed ^ 0x0b7e5eedULL;
  lowp::train::apply_optimizer_settings(r, c);
  return c;
}

// Temporarily bounds OpenMP's team size (the linears' GEMMs use the default).
struct ThreadLimit {
  int saved = omp_get_max_threads();
  explicit ThreadLimit(int n) { omp_set_num_threads(n); }
  ~ThreadLimit() { omp_set_num_threads(saved); }
};

class Trainer {
 public:
  // `init`: the checkpoint of --init (its weights are moved from), or nullptr.
  Trainer(const TrainOptions& o, bool resume, LlamaModel* init) : o_(o) {
    const std::string text = read_text(o.corpus);
    if (text.empty()) throw Error("corpus '" + o.corpus + "' is empty");
    const char* unit = "bytes";
    if (init) {  // the model's own tokens, as `lowp eval --text` finds its tokenizer (no BOS)
      const Tokenizer t = tokenizer_for_model(o.init, o.config.vocab_size);
      data_ = t.encode(text, false, false);
      tokenizer_ = tokenizer_export(o.init, t, o.config.vocab_size);
      unit = "tokens";
    } else {
      data_.assign(text.begin(), text.end());
      for (auto& b : data_) b &= 0xff;
    }
    const std::size_t n = data_.size(), T = static_cast<std::size_t>(o.config.seq_len);
    n_train_ = n - n / 10;
    if (n_train_ < T + 1 || n - n_train_ < T + 1)
      throw Error("corpus '" + o.corpus + "' has " + std::to_string(n) + " " + unit + ": its first 90% and last 10% must each hold one window of " +
                  std::to_string(T + 1) + " " + unit + " (--ctx " + std::to_string(T) + ")");
    if (!init && Tokenizer::bytes_fit(o.config.vocab_size))  // else the GGUF carries no vocabulary
      tokenizer_ = tokenizer_export("", Tokenizer::byte_level(o.config.vocab_size), o.config.vocab_size);
    result_.notes = tokenizer_.notes;
    recipe_ = lowp::train::find_train_recipe(o.recipe);
    LlamaModel start = init ? std::move(*init) : init_model(o.config, o.seed, o.tied);
    if (init) {
      export_seq_len_ = start.config.seq_len;
      start.config.seq_len = o.config.seq_len;  // the window
    }
    net_ = make_train_model(recipe_, start);
    opt_ = std::make_unique<lowp::train::Optimizer>(optimizer_config(o, recipe_));
    opt_->init_params(tensors());  // bf16 master weights start rounded
    net_->weights_changed();
    if (resume) load_state();
  }

  TrainResult run(const std::function<void(const StepInfo&)>& progress) {
    const int threads = o_.threads > 0 ? o_.threads : omp_get_max_threads();
    ThreadLimit limit(threads);
    const std::size_t B = static_cast<std::size_t>(o_.batch), T = static_cast<std::size_t>(o_.config.seq_len);
    const std::size_t m = static_cast<std::size_t>(o_.micro_batch > 0 ? o_.micro_batch : o_.batch), n_micro = B / m;
    dp_ = o_.data_parallel && dist::size() > 1;
    lead_ = !dp_ || dist::rank() == 0;
    const dist::Range mine = dp_ ? dist::share(n_micro, dist::rank(), dist::size()) : dist::Range{0, n_micro};
    const GradComm comm = parse_grad_comm(o_.grad_comm);
    const bool keep_apart = comm == GradComm::fp32 && dp_ && dist::rank() > 0;
    stats_layout_ = net_->take_stats();  // the linears' names (and no stale counts)
    // Each amax history takes one value a step, the max over all micro-batches and ranks.
    net_->defer_amax(true);
    if (lead_) open_log();
    std::vector<std::size_t> sizes;
    for (const auto& p : net_->params()) sizes.push_back(p.size);
    std::size_t n_grad = 0;
    for (std::size_t n : sizes) n_grad += n;
    std::vector<int> tok(B * T), tgt(B * T);
    const auto start = std::chrono::steady_clock::now();
    double sqnr_sum = 0;
    int sqnr_steps = 0;
    if (opt_->steps_done() == 0) snapshot(0);
    // Counting the steps done, not the step: `++step` past --steps 2^31-1 would overflow.
    for (int done = static_cast<int>(opt_->steps_done()); done < o_.steps; ++done) {
      const int step = done + 1;
      const auto t0 = std::chrono::steady_clock::now();
      const bool evaluated = step == o_.steps || (o_.eval_every > 0 && step % o_.eval_every == 0);
      sample(step, tok, tgt);
      MicroBatches mb;
      mb.batch = B;
      mb.micro = m;
      mb.window = T;
      mb.range = mine;
      mb.keep_apart = keep_apart;
      mb.stats = evaluated;
      mb.threads = threads;
      LocalStep local = run_micro_batches(*net_, tok, tgt, mb, step_seed(step), [&](const std::string& tensor) {
        fail_nonfinite(step, tensor, "loss");
      });
      if (!keep_apart && !local.grads.empty()) {  // this rank's sum, as communicated
        const CommError e = quantize_for_comm(comm, local.grads.back(), sizes);
        local.sums.back()[1] = e.signal;
        local.sums.back()[2] = e.noise;
      }
      const std::size_t n_sums = 3 + (evaluated ? 5 * 6 * stats_layout_.size() : 0);
      const std::vector<float> grad = chain_sum(local.grads, n_grad, dp_);
      const std::vector<double> total = chain_sum(local.sums, n_sums, dp_);
      net_->commit_amax(max_over_ranks(net_->take_pending_amax(), dp_));
      set_grad(*net_, grad);
      const lowp::train::StepStats st = update(step);
      snapshot(step);
      StepInfo info;
      info.step = step;
      info.steps = o_.steps;
      info.train_loss = total[0];
      info.lr = st.lr;
      info.grad_norm = st.grad_norm;
      info.grad_comm_sqnr_db = total[2] > 0 ? 10.0 * std::log10(total[1] / total[2]) : INFINITY;
      if (comm != GradComm::fp32 && std::isfinite(info.grad_comm_sqnr_db)) sqnr_sum += info.grad_comm_sqnr_db, ++sqnr_steps;
      const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      info.tokens_per_second = static_cast<double>(B * T) / std::max(dt, 1e-9);
      info.val_loss = std::numeric_limits<double>::quiet_NaN();
      if (evaluated) {
        if (lead_) log_operands(step, total);
        info.val_loss = validate_loss();
        info.evaluated = true;
        result_.val_curve.emplace_back(step, info.val_loss);
        result_.final_val_loss = info.val_loss;
      }
      info.elapsed_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (lead_) log_row(info, comm != GradComm::fp32);
      if (step == o_.steps || (o_.save_every > 0 && step % o_.save_every == 0)) {
        if (lead_) save();
        last_saved_ = static_cast<int>(opt_->steps_done());
      }
      if (progress && lead_) progress(info);
    }
    result_.grad_comm_sqnr_db = sqnr_steps ? sqnr_sum / sqnr_steps : 0;
    return result_;
  }

 private:
  std::uint64_t step_seed(int step) const {
    const RngKey k = rng_key(o_.seed * 0x9e3779b97f4a7c15ULL + static_cast<std::uint64_t>(step));
    return (static_cast<std::uint64_t>(k.k1) << 32) | k.k0;
  }

  // Window b of step s starts at a counter-based random offset in the training split.
  void sample(int step, std::vector<int>& tok, std::vector<int>& tgt) const {
    const std::size_t B = static_cast<std::size_t>(o_.batch), T = static_cast<std::size_t>(o_.config.seq_len);
    const std::vector<std::size_t> offsets = batch_offsets(o_.seed, step, B, n_train_ - T);
    for (std::size_t b = 0; b < B; ++b) {
      const std::size_t off = offsets[b];
      for (std::size_t t = 0; t < T; ++t) {
        tok[b * T + t] = data_[off + t];
        tgt[b * T + t] = data_[off + t + 1];
      }
    }
  }

  std::vector<lowp::train::ParamTensor> tensors() { return optimizer_tensors(*net_); }

  void snapshot(int step) const {
    if (o_.snapshot && std::find(o_.snapshot_steps.begin(), o_.snapshot_steps.end(), step) != o_.snapshot_steps.end())
      o_.snapshot(step, net_->to_model(), data_, n_train_);
  }

  // One optimizer step (global-norm clipping inside); the weights change in place, so the
  // linears drop their cached quantized weights. RMS(g^2/v) per layer from its tensors.
  lowp::train::StepStats update(int step) {
    const auto params = net_->params();
    const auto t = tensors();
    if (!std::isfinite(lowp::train::global_grad_norm(t))) {
      for (const auto& p : params)
        for (std::size_t j = 0; j < p.size; ++j)
          if (!std::isfinite(p.grad[j])) fail_nonfinite(step, "the gradient of " + p.name, "gradient norm");
    }
    lowp::train::StepStats st = opt_->step(t);
    net_->weights_changed();
    std::vector<std::vector<lowp::train::TensorStepStats>> per_layer(static_cast<std::size_t>(o_.config.n_layers));
    for (std::size_t i = 0; i < params.size(); ++i)
      if (params[i].layer >= 0) per_layer[static_cast<std::size_t>(params[i].layer)].push_back(st.tensors[i]);
    rms_.clear();
    for (const auto& l : per_layer) rms_.push_back(lowp::train::combined_rms(l));
    return st;
  }

  // The held-out windows in chunks of --batch, their losses summed in chunk order; under
  // data parallelism the chunks are dealt to the ranks and chain-summed. Validation leaves the
  // amax histories alone.
  double validate_loss() {
    const std::size_t B = static_cast<std::size_t>(o_.batch), T = static_cast<std::size_t>(o_.config.seq_len);
    const std::size_t n_val = data_.size() - n_train_;
    const std::size_t avail = (n_val - 1) / T;
    const std::size_t windows = std::min<std::size_t>(avail, static_cast<std::size_t>(std::max(1, o_.val_windows)));
    const std::size_t chunks = (windows + B - 1) / B;
    const dist::Range mine = dp_ ? dist::share(chunks, dist::rank(), dist::size()) : dist::Range{0, chunks};
    std::vector<std::vector<double>> parts;
    std::vector<int> tok, tgt;
    for (std::size_t c = mine.begin; c < mine.end; ++c) {
      const std::size_t w0 = c * B, nb = std::min(B, windows - w0);
      tok.resize(nb * T);
      tgt.resize(nb * T);
      for (std::size_t b = 0; b < nb; ++b) {
        const std::size_t off = n_train_ + (w0 + b) * avail / windows * T;  // evenly spread
        for (std::size_t t = 0; t < T; ++t) {
          tok[b * T + t] = data_[off + t];
          tgt[b * T + t] = data_[off + t + 1];
        }
      }
      const double l = net_->forward(tok, tgt, nb, T, o_.threads > 0 ? o_.threads : omp_get_max_threads(), 0x7a1);
      parts.push_back({l * static_cast<double>(nb)});
    }
    net_->take_pending_amax();
    return chain_sum(parts, 1, dp_)[0] / static_cast<double>(windows);
  }

  [[noreturn]] void fail_nonfinite(int step, const std::string& tensor, const char* what) const {
    const std::string kept = last_saved_ > 0 ? "the last good checkpoint (step " + std::to_string(last_saved_) + ") is kept in " + o_.out
                                             : "no checkpoint was written yet";
    throw Error("step " + std::to_string(step) + ": non-finite " + what + "; first non-finite tensor: " +
                (tensor.empty() ? std::string("none of the activations (the loss itself)") : tensor) + "; " + kept);
  }

  // ---- log.csv
  std::string log_path() const { return (fs::path(o_.out) / "log.csv").string(); }

  // Rewrites a CSV with `header` and, when resumed, its rows up to the checkpoint's step.
  std::vector<std::string> reopen_csv(const std::string& path, const std::string& header, std::ofstream& out) {
    std::string kept = header + "\n";
    std::vector<std::string> rows;
    const int done = static_cast<int>(opt_->steps_done());
    if (done > 0) {
      std::ifstream f(path);
      std::string line;
      std::getline(f, line);
      while (std::getline(f, line)) {
        if (f.eof() || std::atoi(line.c_str()) > done) break;  // f.eof(): a line torn by a kill
        kept += line + "\n";
        rows.push_back(line);
      }
    }
    detail::write_file_atomic(path, kept);
    out.open(path, std::ios::app);
    if (!out) throw Error("cannot append to " + path);
    return rows;
  }

  void open_log() {
    std::string header = "step,train_loss,val_loss,lr,grad_norm,tokens_per_second";
    for (int l = 0; l < o_.config.n_layers; ++l) header += ",rms_g2_over_v_layer" + std::to_string(l);
    if (o_.grad_comm != "fp32") header += ",grad_comm_sqnr_db";
    reopen_csv((fs::path(o_.out) / "quant.csv").string(), "step,layer,linear,gemm,operand,sqnr_db,saturated,flushed", quant_);
    for (const std::string& line : reopen_csv(log_path(), header, log_)) {
      const auto c1 = line.find(','), c2 = line.find(',', c1 + 1), c3 = line.find(',', c2 + 1);
      if (c2 != std::string::npos && c3 > c2 + 1) {  // an evaluated step
        result_.final_val_loss = std::atof(line.substr(c2 + 1, c3 - c2 - 1).c_str());
        result_.val_curve.emplace_back(std::atoi(line.c_str()), result_.final_val_loss);
      }
    }
  }

  // DIR/quant.csv: per layer, linear, GEMM and quantized operand of this step, what the
  // recipe's quantization does (operands left in float32 have no row).
  // `total`: the step's sums, the operand statistics from index 3 (5 values per operand).
  void log_operands(int step, const std::vector<double>& total) {
    static constexpr const char* kGemm[3] = {"fwd", "dgrad", "wgrad"};
    static constexpr const char* kOperand[6] = {"X", "W", "dY", "W^T", "dY^T", "X^T"};
    std::size_t at = 3;
    for (const auto& s : stats_layout_)
      for (std::size_t k = 0; k < s.ops.size(); ++k, at += 5) {
        quant::OperandStats o;
        o.count = static_cast<std::size_t>(total[at]);
        o.saturated = static_cast<std::size_t>(total[at + 1]);
        o.flushed = static_cast<std::size_t>(total[at + 2]);
        o.signal = total[at + 3];
        o.noise = total[at + 4];
        if (o.count == 0) continue;
        const double n = static_cast<double>(o.count);
        quant_ << step << ',' << s.layer << ',' << s.linear << ',' << kGemm[k / 2] << ',' << kOperand[k] << ','
               << num(o.sqnr_db()) << ',' << num(static_cast<double>(o.saturated) / n) << ','
               << num(static_cast<double>(o.flushed) / n) << '\n';
      }
    quant_.flush();
  }

  void log_row(const StepInfo& s, bool comm_column) {
    log_ << s.step << ',' << num(s.train_loss) << ',' << num(s.val_loss) << ',' << num(s.lr) << ',' << num(s.grad_norm)
         << ',' << num(s.tokens_per_second);
    for (double r : rms_) log_ << ',' << num(r);
    if (comm_column) log_ << ',' << num(s.grad_comm_sqnr_db);
    log_ << '\n';
    log_.flush();
  }

  // ---- checkpoints (train/checkpoint.hpp): the exports first, then state.bin, which a resume
  // reads; a kill in between leaves exports newer than state.bin, which a resume rewrites.
  void save() {
    write_exports();
    std::vector<std::span<const float>> tensors;
    for (const auto& p : net_->params()) tensors.emplace_back(p.value, p.size);
    const auto opt = opt_->save(), lin = net_->save_linear_state();
    write_state_file((fs::path(o_.out) / "state.bin").string(), encode_state(tensors, opt, lin));
    last_saved_ = static_cast<int>(opt_->steps_done());
  }

  // model.gguf and model.safetensors + config.json always (unless config.json cannot hold the
  // architecture), model.bin where llama2.c's format can hold it; what is skipped is noted once.
  // The tokenizer goes into model.gguf and its files beside the others (train/export_tokenizer.hpp).
  void write_exports() {
    LlamaModel m = net_->to_model();
    if (export_seq_len_ > 0) m.config.seq_len = export_seq_len_;  // --init: the model's own context
    const fs::path dir(o_.out);
    const auto note = [&](const std::string& line) {
      if (std::find(result_.notes.begin(), result_.notes.end(), line) == result_.notes.end()) result_.notes.push_back(line);
    };
    if (const std::string why = detail::llama2c_cannot_hold(m); why.empty())
      detail::save_llama2c(m, (dir / "model.bin").string());
    else
      note("model.bin not written: llama2.c's format cannot hold " + why);
    detail::save_gguf(m, (dir / "model.gguf").string(), tokenizer_.gguf);
    write_tokenizer_files(tokenizer_, o_.out);
    if (m.config.rope_freq_factors.empty())
      detail::save_safetensors(m, (dir / "model.safetensors").string());
    else
      note("model.safetensors not written: config.json cannot hold RoPE frequency factors");
  }

  // Everything is checked before anything is loaded: a refused state.bin leaves no half-loaded run.
  void load_state() {
    const std::string path = (fs::path(o_.out) / "state.bin").string();
    if (!fs::exists(path)) throw Error("--resume " + o_.out + ": no state.bin (no checkpoint was saved)");
    TrainState st = decode_state(read_state_file(path), path);
    const auto params = net_->params();
    if (st.tensors.size() != params.size())
      throw Error(path + ": " + std::to_string(st.tensors.size()) + " tensors, the model of train.cfg has " +
                  std::to_string(params.size()) + " (not a state of this model)");
    for (std::size_t i = 0; i < params.size(); ++i)
      if (st.tensors[i].size() != params[i].size)
        throw Error(path + ": tensor " + params[i].name + " holds " + std::to_string(st.tensors[i].size()) +
                    " values, the model of train.cfg has " + std::to_string(params[i].size) + " (not a state of this model)");
    try {
      opt_->load(st.optimizer, tensors());
      net_->load_linear_state(st.linears);
    } catch (const Error& e) {
      throw Error(path + ": " + e.what());
    }
    for (std::size_t i = 0; i < params.size(); ++i) std::copy(st.tensors[i].begin(), st.tensors[i].end(), params[i].value);
    net_->weights_changed();
    last_saved_ = static_cast<int>(opt_->steps_done());
    // The exports of the step the run continues from; rank 0 writes the files (run() sets lead_ later).
    if (!(o_.data_parallel && dist::size() > 1) || dist::rank() == 0) write_exports();
  }

  TrainOptions o_;
  int export_seq_len_ = 0;  // --init: the checkpoint's seq_len, which the exports keep
  TokenizerExport tokenizer_;
  std::vector<int> data_;
  std::size_t n_train_ = 0;
  std::unique_ptr<TrainModel> net_;
  lowp::train::TrainRecipe recipe_;
  std::unique_ptr<lowp::train::Optimizer> opt_;
  std::vector<double> rms_;
  std::ofstream log_, quant_;
  TrainResult result_;
  int last_saved_ = 0;
  bool dp_ = false, lead_ = true;  // data parallel across the ranks; rank 0 (writes the files)
  std::vector<TrainLlama::LinearStats> stats_layout_;
};

}  // namespace

std::vector<std::size_t> batch_offsets(std::uint64_t seed, int step, std::size_t batch, std::size_t span) {
  const RngKey key = rng_key(seed ^ 0xda7a5eedULL);
  std::vector<std::size_t> off(batch);
  for (std::size_t b = 0; b < batch; ++b) {
    const std::uint64_t i = (static_cast<std::uint64_t>(step) * batch + b) * 2;
    const std::uint64_t r = (static_cast<std::uint64_t>(random_bits(key, i)) << 32) | random_bits(key, i + 1);
    off[b] = r % span;
  }
  return off;
}

std::unique_ptr<TrainModel> make_train_model(const lowp::train::TrainRecipe& r, const LlamaModel& start) {
  if (r.scalify) return std::make_unique<ScalifyLlama>(start, r.scalify_formats);
  const std::size_t n_layers = start.layers.size();
  return std::make_unique<TrainLlama>(start, [&](int linear, std::size_t layer) {
    return lowp::train::linear_for(r, static_cast<LinearKind>(linear), layer, n_layers);
  }, &r.classifier);
}

LlamaConfig named_config(const std::string& name) {
  LlamaConfig c;
  c.vocab_size = 258;
  if (name == "tiny") {  // CI: seconds
    c.dim = 64, c.hidden_dim = 192, c.n_layers = 2, c.n_heads = 2, c.n_kv_heads = 1, c.seq_len = 64;
  } else if (name == "small") {  // the default: head_dim 32
    c.dim = 128, c.hidden_dim = 384, c.n_layers = 4, c.n_heads = 4, c.n_kv_heads = 2, c.seq_len = 128;
  } else if (name == "medium") {  // head_dim 64
    c.dim = 256, c.hidden_dim = 768, c.n_layers = 4, c.n_heads = 4, c.n_kv_heads = 2, c.seq_len = 128;
  } else {
    throw Error("unknown config '" + name + "' (known: tiny, small, medium)");
  }
  return c;
}

TrainResult run_training(TrainOptions o, bool resume, const std::function<void(const StepInfo&)>& progress) {
  if (resume) {
    const int steps = o.steps, threads = o.threads;
    o = load_config(o.out, o);
    o.steps = steps;
    o.threads = threads;
  }
  std::unique_ptr<LlamaModel> init;
  if (!o.init.empty()) {  // the checkpoint's shape and architecture; --ctx stays the window
    o.init = resolve_model_path(o.init);
    if (!fs::exists(o.init)) throw Error("--init " + o.init + ": no such file or directory");
    init = std::make_unique<LlamaModel>(load_model(o.init, WeightStorage::widened));
    const int window = o.config.seq_len > 0 ? o.config.seq_len : std::min(128, init->config.seq_len);
    if (window > init->config.seq_len)
      throw Error("--ctx " + std::to_string(window) + " is beyond the context length " +
                  std::to_string(init->config.seq_len) + " of " + o.init);
    o.config = init->config;
    o.config.seq_len = window;
    o.tied = init->classifier.empty();
    o.init = fs::absolute(o.init).string();  // resume finds it
  }
  if (o.steps <= 0) throw Error("--steps must be positive, not " + std::to_string(o.steps));
  if (o.batch <= 0) throw Error("--batch must be positive, not " + std::to_string(o.batch));
  if (o.micro_batch < 0 || (o.micro_batch > 0 && o.batch % o.micro_batch != 0))
    throw Error("--micro-batch " + std::to_string(o.micro_batch) + " must divide --batch " + std::to_string(o.batch));
  parse_grad_comm(o.grad_comm);
  if (!(o.lr > 0) || !std::isfinite(o.lr)) throw Error("--lr must be a positive number");
  if (o.config.seq_len < 2) throw Error("--ctx must be at least 2, not " + std::to_string(o.config.seq_len));
  if (o.warmup < 0) o.warmup = std::min(100, o.steps / 10);
  validate(o.config, "the model options");
  if (o.config.head_dim() % 2) throw Error("head_dim " + std::to_string(o.config.head_dim()) + " must be even (RoPE pairs)");
  if (o.out.empty()) throw Error("--out is required");
  lowp::train::find_train_recipe(o.recipe);  // an unknown recipe fails before anything is written
  const auto builtin = lowp::train::builtin_train_recipes();
  const bool named = std::any_of(builtin.begin(), builtin.end(), [&](const auto& r) { return r.name == o.recipe; });
  if (!named) o.recipe = fs::absolute(o.recipe).string();  // resume finds the file
  Trainer trainer(o, resume, init.get());
  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (ec) throw Error("cannot create " + o.out + ": " + ec.message());
  if (!resume && (!o.data_parallel || dist::rank() == 0)) save_config(o);
  return trainer.run(progress);
}

}  // namespace lowp::accuracy::train
