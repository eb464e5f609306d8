// probe_point() and run_probe(): the passes behind `lowp probe`.
#include "train/probe/probe.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>

#include "dist/bytes.hpp"
#include "dist/comm.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/numerics/rng.hpp"
#include "lowp/quant/gemm.hpp"
#include "model/tensors.hpp"
#include "train/llama_train.hpp"
#include "train/trainer.hpp"

namespace lowp::accuracy::train::probe {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kClassifierLayer = GemmMeasure::kClassifierLayer;
constexpr const char* kGemm[3] = {"fwd", "dgrad", "wgrad"};
// A linear's tensor name (the table's lowp name: "wq", ..., "w_down", "classifier") by its LinearKind index.
const char* linear_name(std::size_t kind) {
  return accuracy::detail::linear_tensor(static_cast<LinearKind>(kind)).lowp;
}

// A row's figures from per-batch sums.
Row make_row(const std::string& recipe, int step, int layer, std::string tensor, std::string gemm,
             const std::vector<BatchSums>& batches) {
  Row r;
  r.recipe = recipe;
  r.step = step;
  r.layer = layer;
  r.tensor = std::move(tensor);
  r.gemm = std::move(gemm);
  const Figures f = figures_over(batches);
  r.rel_mse = f.rel_mse;
  r.bias2 = f.bias2;
  r.variance = f.variance;
  r.cosine = f.cosine;
  r.proj = f.proj;
  r.noise_ratio = 1.0 / std::sqrt(r.rel_mse.mean);
  r.loss_delta = r.saturated = r.flushed = r.scale_log2_sd = kNaN;
  return r;
}

// "layers.3.wq" -> {3, "wq"}; "norm" -> {-1, "norm"}.
std::pair<int, std::string> split_name(const std::string& name) {
  if (name.rfind("layers.", 0) != 0) return {-1, name};
  const std::size_t dot = name.find('.', 7);
  return {std::stoi(name.substr(7, dot - 7)), name.substr(dot + 1)};
}

std::vector<Batch> held_batches(std::span<const int> data, std::size_t n_train, std::size_t batch, std::size_t T,
                                int count, std::uint64_t seed) {
  const std::size_t span = data.size() - n_train - T;  // the trainer keeps >= T + 1 tokens held out
  std::vector<Batch> out(static_cast<std::size_t>(count));
  for (std::size_t b = 0; b < out.size(); ++b) {
    const std::vector<std::size_t> off = batch_offsets(seed ^ 0x9e1dba7cULL, static_cast<int>(b), batch, std::max<std::size_t>(span, 1));
    for (std::size_t w = 0; w < batch; ++w)
      for (std::size_t t = 0; t < T; ++t) {
        out[b].tokens.push_back(data[n_train + off[w] + t]);
        out[b].targets.push_back(data[n_train + off[w] + t + 1]);
      }
  }
  return out;
}

void put_rows(dist::ByteWriter& w, const std::vector<Row>& rows) {
  w.pod<std::uint64_t>(rows.size());
  for (const Row& r : rows) {
    w.str(r.recipe), w.str(r.tensor), w.str(r.gemm);
    w.pod(r.step), w.pod(r.layer), w.pod(r.rel_mse), w.pod(r.bias2);
    for (double v : {r.variance, r.cosine, r.proj, r.noise_ratio, r.loss_delta, r.saturated, r.flushed, r.scale_log2_sd}) w.pod(v);
  }
}

std::vector<Row> get_rows(dist::ByteReader& in) {
  std::vector<Row> rows(static_cast<std::size_t>(in.pod<std::uint64_t>()));
  for (Row& r : rows) {
    r.recipe = in.str(), r.tensor = in.str(), r.gemm = in.str();
    r.step = in.pod<int>(), r.layer = in.pod<int>(), r.rel_mse = in.pod<Interval>(), r.bias2 = in.pod<Interval>();
    for (double* v : {&r.variance, &r.cosine, &r.proj, &r.noise_ratio, &r.loss_delta, &r.saturated, &r.flushed, &r.scale_log2_sd})
      *v = in.pod<double>();
  }
  return rows;
}

}  // namespace

std::uint64_t draw_seed(std::uint64_t seed, int step, std::size_t batch, int draw) {
  const std::uint64_t c = ((static_cast<std::uint64_t>(step) * 0x10001ULL + batch) << 16) + static_cast<std::uint64_t>(draw);
  const RngKey k = rng_key(seed * 0x9e3779b97f4a7c15ULL ^ (c * 0xc2b2ae3d27d4eb4fULL) ^ 0x7072be5eedULL);
  return (static_cast<std::uint64_t>(k.k1) << 32) | k.k0;
}

Reference fp32_reference(const LlamaModel& theta, const std::vector<Batch>& batches, const PointOptions& o) {
  const std::unique_ptr<TrainModel> net = make_train_model(lowp::train::find_train_recipe("fp32"), theta);
  Reference r;
  for (const Batch& b : batches) {
    net->zero_grad();
    r.loss.push_back(net->forward(b.tokens, b.targets, o.batch, o.ctx, o.threads, 0));
    net->backward(o.threads, 0);
    r.grad.emplace_back();
    for (const TrainParam& p : net->params()) r.grad.back().insert(r.grad.back().end(), p.grad, p.grad + p.size);
  }
  return r;
}

std::vector<Row> probe_point(const LlamaModel& theta, const lowp::train::TrainRecipe& recipe,
                             const std::vector<Batch>& batches, const PointOptions& o) {
  return probe_point(theta, recipe, batches, o, fp32_reference(theta, batches, o));
}

std::vector<Row> probe_point(const LlamaModel& theta, const lowp::train::TrainRecipe& recipe,
                             const std::vector<Batch>& batches, const PointOptions& o, const Reference& ref) {
  if (batches.empty() || ref.grad.size() != batches.size()) throw Error("probe: no batches, or a reference of other batches");
  const std::unique_ptr<TrainModel> net = make_train_model(recipe, theta);
  auto* llama = dynamic_cast<TrainLlama*>(net.get());
  // Every draw starts from the same linear state (delayed scaling: an empty amax history).
  const std::vector<std::uint8_t> state = net->save_linear_state();
  std::vector<TrainParam> hp = net->params();
  std::size_t n_grad = 0;
  for (const TrainParam& p : hp) n_grad += p.size;
  if (n_grad != ref.grad[0].size()) throw Error("probe: recipe '" + recipe.name + "' has other parameters than fp32");
  std::vector<DrawAccumulator> acc(hp.size());
  std::vector<std::vector<BatchSums>> tensor_sums(hp.size());
  GemmMeasure gemms(o.draws, o.threads);
  int draw = 0;
  if (llama) llama->observe_gemms([&](const TrainLlama::GemmView& v) { gemms.observe(v, draw); });
  std::map<std::pair<int, int>, std::array<std::size_t, 3>> op_counts;  // (key, gemm) -> count, saturated, flushed
  double loss_delta = 0;
  const std::size_t B = o.batch, T = o.ctx;
  // Seed-free: later draws repeat draw 0 once draw 1 of the first batch has given its bits.
  bool reuse = o.reuse_seed_free && llama && !llama->uses_seed();
  std::vector<float> first_grad;  // draw 0 of the first batch, for that check
  double first_loss = 0, term = 0;
  for (std::size_t b = 0; b < batches.size(); ++b) {
    const double loss_f = ref.loss[b];
    for (std::size_t t = 0; t < hp.size(); ++t) acc[t].begin(hp[t].size, o.draws);
    for (draw = 0; draw < o.draws; ++draw) {
      if (reuse && draw >= (b == 0 ? 2 : 1)) {
        loss_delta += term;
        for (auto& a : acc) a.repeat(draw);
        gemms.repeat(draw);
        continue;
      }
      const std::uint64_t seed = draw_seed(o.seed, o.step, b, draw);
      net->load_linear_state(state);
      net->zero_grad();
      // Operand statistics from the first batch's first draw: counting takes the quantizers'
      // slow path, and one pass already counts every element of every operand.
      const bool stats = b == 0 && draw == 0;
      net->collect_stats(stats);
      const double loss = net->forward(batches[b].tokens, batches[b].targets, B, T, o.threads, seed);
      if (!std::isfinite(loss)) throw Error("probe: recipe '" + recipe.name + "' gives a non-finite loss at step " + std::to_string(o.step));
      term = (loss - loss_f) / static_cast<double>(o.draws * static_cast<int>(batches.size()));
      loss_delta += term;
      net->backward(o.threads, seed);
      hp = net->params();
      if (reuse && b == 0 && draw < 2) {
        std::vector<float> g;
        for (const TrainParam& p : hp) g.insert(g.end(), p.grad, p.grad + p.size);
        if (draw == 0) {
          first_grad = std::move(g), first_loss = loss;
        } else if (loss != first_loss || g != first_grad) {  // bits that uses_seed() missed: run every draw
          reuse = false;
        }
      }
      for (std::size_t t = 0, at = 0; t < hp.size(); at += hp[t].size, ++t)
        acc[t].add(draw, {hp[t].grad, hp[t].size}, {ref.grad[b].data() + at, hp[t].size});
      for (const TrainLinearStats& s : stats ? net->take_stats() : std::vector<TrainLinearStats>{}) {
        int li = 0;
        while (li < static_cast<int>(linear_kind_count) && linear_name(static_cast<std::size_t>(li)) != s.linear) ++li;
        const int key = (s.layer < 0 ? kClassifierLayer : s.layer) * 16 + li;
        for (int g = 0; g < 3; ++g) {
          auto& c = op_counts[{key, g}];
          for (int side = 0; side < 2; ++side) {
            const quant::OperandStats& st = s.ops[static_cast<std::size_t>(2 * g + side)];
            c[0] += st.count, c[1] += st.saturated, c[2] += st.flushed;
          }
        }
      }
    }
    net->collect_stats(false);
    for (std::size_t t = 0; t < hp.size(); ++t) tensor_sums[t].push_back(acc[t].finish());
    gemms.end_batch();
  }
  if (llama) llama->observe_gemms({});

  std::vector<Row> rows;
  std::vector<BatchSums> model(batches.size());
  for (const auto& ts : tensor_sums)
    for (std::size_t b = 0; b < ts.size(); ++b) model[b] += ts[b];
  rows.push_back(make_row(recipe.name, o.step, -1, "model", "grad", model));
  rows.back().loss_delta = loss_delta;
  for (std::size_t t = 0; t < hp.size(); ++t) {
    const auto [layer, name] = split_name(hp[t].name);
    rows.push_back(make_row(recipe.name, o.step, layer, name, "grad", tensor_sums[t]));
  }
  for (int g = 0; g < 3; ++g) {
    std::vector<BatchSums> all(batches.size());
    std::vector<Row> per;
    std::size_t count = 0, sat = 0, flushed = 0;
    for (auto& [k, seg] : gemms.segs()) {
      if (k.second != g) continue;
      for (std::size_t b = 0; b < seg.batches.size(); ++b) all[b] += seg.batches[b];
      const int layer = k.first / 16 >= kClassifierLayer ? -1 : k.first / 16;
      Row r = make_row(recipe.name, o.step, layer, linear_name(static_cast<std::size_t>(k.first % 16)), kGemm[g], seg.batches);
      const auto c = op_counts[k];
      count += c[0], sat += c[1], flushed += c[2];
      if (c[0]) r.saturated = static_cast<double>(c[1]) / static_cast<double>(c[0]), r.flushed = static_cast<double>(c[2]) / static_cast<double>(c[0]);
      std::vector<double> sds;
      for (double v : seg.scale_sd)
        if (std::isfinite(v)) sds.push_back(v);
      r.scale_log2_sd = sds.empty() ? kNaN : interval_over(sds).mean;
      per.push_back(std::move(r));
    }
    if (per.empty()) continue;
    rows.push_back(make_row(recipe.name, o.step, -1, "model", kGemm[g], all));
    if (count) rows.back().saturated = static_cast<double>(sat) / static_cast<double>(count), rows.back().flushed = static_cast<double>(flushed) / static_cast<double>(count);
    rows.insert(rows.end(), per.begin(), per.end());
  }
  return rows;
}

std::vector<Row> run_probe(const Options& o, const std::function<void(const std::string&)>& progress) {
  if (o.recipes.empty()) throw Error("--recipes: give at least one recipe");
  if (o.at.empty()) throw Error("--at: give at least one step");
  for (std::size_t i = 0; i < o.at.size(); ++i)
    if (o.at[i] < 0 || (i && o.at[i] <= o.at[i - 1])) throw Error("--at: steps must be increasing and >= 0");
  if (o.batches < 1) throw Error("--batches must be at least 1, not " + std::to_string(o.batches));
  if (o.draws < 2) throw Error("--draws must be at least 2 (the variance needs two), not " + std::to_string(o.draws));
  if (o.out.empty()) throw Error("--out is required");
  std::vector<lowp::train::TrainRecipe> recipes;
  for (const std::string& r : o.recipes) recipes.push_back(lowp::train::find_train_recipe(r));
  const std::size_t R = recipes.size(), J = R * o.at.size();
  const dist::Range mine = dist::share(J, dist::rank(), dist::size());
  std::vector<std::vector<Row>> done(J);
  TrainOptions t;
  t.corpus = o.corpus;
  t.init = o.init;
  t.config = o.config;
  t.tied = o.tied;
  t.recipe = "fp32";
  t.out = (std::filesystem::path(o.out) / "fp32").string();
  t.steps = std::max(1, o.at.back());
  t.seed = o.seed;
  t.threads = o.threads;
  t.batch = o.batch;
  t.lr = o.lr;
  t.eval_every = 0;
  t.snapshot_steps = o.at;
  t.snapshot = [&](int step, const LlamaModel& w, std::span<const int> data, std::size_t n_train) {
    const std::size_t k = static_cast<std::size_t>(std::find(o.at.begin(), o.at.end(), step) - o.at.begin());
    if (mine.end <= k * R || mine.begin >= (k + 1) * R) return;
    const std::size_t T = static_cast<std::size_t>(w.config.seq_len), Bn = static_cast<std::size_t>(o.batch);
    const std::vector<Batch> batches = held_batches(data, n_train, Bn, T, o.batches, o.seed);
    const PointOptions po{step, o.draws, o.threads, o.seed, Bn, T};
    const Reference ref = fp32_reference(w, batches, po);
    for (std::size_t i = 0; i < R; ++i) {
      const std::size_t j = k * R + i;
      if (j < mine.begin || j >= mine.end) continue;
      done[j] = probe_point(w, recipes[i], batches, po, ref);
      if (progress) progress(recipes[i].name + " at step " + std::to_string(step) + ": whole-model rel_mse " +
                             std::to_string(done[j][0].rel_mse.mean));
    }
  };
  run_training(t, false, {});
  if (dist::size() > 1) {  // every rank's jobs to rank 0, in job order
    dist::ByteWriter w;
    for (std::size_t j = mine.begin; j < mine.end; ++j) put_rows(w, done[j]);
    const auto parts = dist::gather_to_root(w.out);
    for (int r = 0; r < static_cast<int>(parts.size()); ++r) {
      const dist::Range theirs = dist::share(J, r, dist::size());
      dist::ByteReader in(parts[static_cast<std::size_t>(r)], "probe: rank " + std::to_string(r) + " sent a malformed result");
      for (std::size_t j = theirs.begin; j < theirs.end; ++j) done[j] = get_rows(in);
    }
    if (dist::rank() != 0) return {};
  }
  std::vector<Row> rows;  // recipe by recipe, step by step
  for (std::size_t i = 0; i < R; ++i)
    for (std::size_t k = 0; k < o.at.size(); ++k) rows.insert(rows.end(), done[k * R + i].begin(), done[k * R + i].end());
  return rows;
}

}  // namespace lowp::accuracy::train::probe
