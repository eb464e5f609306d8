// run_training(): the loop of `lowp train`.
#include "train/trainer.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>

#include "dist/comm.hpp"
#include "lowp/accuracy/loaders.hpp"
#include "lowp/accuracy/tokenizer.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/numerics/rng.hpp"
#include "lowp/quant/linear.hpp"
#include "optim/optimizer.hpp"
#include "recipe/train_recipe.hpp"
#include "train/checkpoint_dir.hpp"
#include "train/data_parallel.hpp"
#include "train/export_tokenizer.hpp"
#include "train/llama_train.hpp"
#include "train/run_config.hpp"
#include "train/scalify_llama.hpp"
#include "train/train_log.hpp"

namespace lowp::accuracy::train {
namespace {

namespace fs = std::filesystem;

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
  Trainer(const TrainOptions& o, bool resume, LlamaModel* init)
      : o_(o), corpus_(o.corpus, init ? o.init : "", o.config.vocab_size, static_cast<std::size_t>(o.config.seq_len)) {
    TokenizerExport tokenizer;
    if (init)
      tokenizer = tokenizer_export(o.init, *corpus_.tokenizer(), o.config.vocab_size);
    else if (Tokenizer::bytes_fit(o.config.vocab_size))  // else the GGUF carries no vocabulary
      tokenizer = tokenizer_export("", Tokenizer::byte_level(o.config.vocab_size), o.config.vocab_size);
    result_.notes = tokenizer.notes;
    recipe_ = lowp::train::find_train_recipe(o.recipe);
    LlamaModel start = init ? std::move(*init) : init_model(o.config, o.seed, o.tied);
    checkpoints_ = std::make_unique<CheckpointDir>(o.out, std::move(tokenizer), init ? start.config.seq_len : 0);
    start.config.seq_len = o.config.seq_len;  // the window (--init: the exports keep the checkpoint's)
    net_ = make_train_model(recipe_, start);
    opt_ = std::make_unique<lowp::train::Optimizer>(optimizer_config(o, recipe_));
    opt_->init_params(tensors());  // bf16 master weights start rounded
    net_->weights_changed();
    if (resume) {
      checkpoints_->load(*net_, *opt_);
      last_saved_ = static_cast<int>(opt_->steps_done());
      // The exports of the step the run continues from; rank 0 writes the files (run() sets lead_ later).
      if (!(o.data_parallel && dist::size() > 1) || dist::rank() == 0) checkpoints_->write_exports(*net_, result_.notes);
    }
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
    if (lead_) {
      result_.val_curve = log_.open(o_.out, o_.config.n_layers, o_.grad_comm != "fp32", static_cast<int>(opt_->steps_done()));
      if (!result_.val_curve.empty()) result_.final_val_loss = result_.val_curve.back().second;
    }
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
      corpus_.sample(o_.seed, step, B, tok, tgt);
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
        if (lead_) log_.operands(step, stats_layout_, total);
        info.val_loss = validate_loss();
        info.evaluated = true;
        result_.val_curve.emplace_back(step, info.val_loss);
        result_.final_val_loss = info.val_loss;
      }
      info.elapsed_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (lead_) log_.row(info, rms_, comm != GradComm::fp32);
      if (step == o_.steps || (o_.save_every > 0 && step % o_.save_every == 0)) {
        if (lead_) checkpoints_->save(*net_, *opt_, result_.notes);
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

  std::vector<lowp::train::ParamTensor> tensors() { return optimizer_tensors(*net_); }

  void snapshot(int step) const {
    if (o_.snapshot && std::find(o_.snapshot_steps.begin(), o_.snapshot_steps.end(), step) != o_.snapshot_steps.end())
      o_.snapshot(step, net_->to_model(), corpus_.tokens(), corpus_.n_train());
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
    const std::size_t windows = corpus_.validation_windows(o_.val_windows);
    const std::size_t chunks = (windows + B - 1) / B;
    const dist::Range mine = dp_ ? dist::share(chunks, dist::rank(), dist::size()) : dist::Range{0, chunks};
    std::vector<std::vector<double>> parts;
    std::vector<int> tok, tgt;
    for (std::size_t c = mine.begin; c < mine.end; ++c) {
      const std::size_t w0 = c * B, nb = std::min(B, windows - w0);
      corpus_.validation_batch(w0, nb, windows, tok, tgt);
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

  TrainOptions o_;
  TrainCorpus corpus_;
  std::unique_ptr<CheckpointDir> checkpoints_;
  TrainLog log_;
  std::unique_ptr<TrainModel> net_;
  lowp::train::TrainRecipe recipe_;
  std::unique_ptr<lowp::train::Optimizer> opt_;
  std::vector<double> rms_;
  TrainResult result_;
  int last_saved_ = 0;
  bool dp_ = false, lead_ = true;  // data parallel across the ranks; rank 0 (writes the files)
  std::vector<TrainLlama::LinearStats> stats_layout_;
};

}  // namespace

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
    o.tied = init->tied();
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
