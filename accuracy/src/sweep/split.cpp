// The model sweep's units of work, their exchange between ranks, and their assembly.
#include "sweep/split.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <map>
#include <numeric>
#include <optional>
#include <utility>

#include "dist/bytes.hpp"
#include "dist/comm.hpp"
#include "eval/windows.hpp"
#include "lowp/numerics/error.hpp"
#include "sweep/prefix_cache.hpp"

namespace lowp::accuracy::detail {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// 0: a mean KLD; 1: NaN (no finite position); 2: the recipe failed.
int order_group(const RecipeResult& r) {
  if (!r.error.empty()) return 2;
  return std::isnan(r.cmp.kld_mean) ? 1 : 0;
}

// The scored rows [offset, offset + count) of a run (a window of llama.cpp's base logits).
EvalRun slice(const EvalRun& run, std::size_t offset, std::size_t count) {
  EvalRun s;
  s.vocab = run.vocab;
  if (offset + count > run.scored()) return s;  // a mismatch compare() reports for the whole run
  s.targets.assign(run.targets.begin() + static_cast<std::ptrdiff_t>(offset),
                   run.targets.begin() + static_cast<std::ptrdiff_t>(offset + count));
  if ((offset + count) * run.vocab <= run.log_probs.size())
    s.log_probs.assign(run.log_probs.begin() + static_cast<std::ptrdiff_t>(offset * run.vocab),
                       run.log_probs.begin() + static_cast<std::ptrdiff_t>((offset + count) * run.vocab));
  return s;
}

void test_hook_fail_rank() {
  const char* v = std::getenv("LOWP_TEST_FAIL_RANK");
  if (v && *v && std::atoi(v) == dist::rank())
    throw Error("LOWP_TEST_FAIL_RANK=" + std::string(v) + ": this rank fails as asked (a test hook)");
}

}  // namespace

std::size_t SweepJob::windows() const {
  try {
    return windows_for(model, tokens, opt).count();
  } catch (const Error&) {
    if (!base) throw;
    return 0;  // with a base every recipe fails with this error (assemble)
  }
}

std::vector<SweepUnit> run_units(const SweepJob& job, std::size_t begin, std::size_t end,
                                 const SweepProgress& progress) {
  test_hook_fail_rank();
  std::vector<SweepUnit> out;
  if (begin >= end) return out;
  const std::size_t runs = job.runs(), first_recipe = job.base ? 0 : 1;
  const std::size_t w0 = begin / runs, w1 = (end - 1) / runs + 1;  // the windows this share touches
  const Windows win = windows_for(job.model, job.tokens, job.opt);
  const bool score_all = job.opt.score_all;
  std::size_t done = 0;
  const auto step = [&](const std::string& what) {
    if (progress) progress(what, static_cast<double>(++done) / static_cast<double>(end - begin));
  };
  const auto mine = [&](std::size_t w, std::size_t run) {
    const std::size_t u = w * runs + run;
    return u >= begin && u < end;
  };

  // The reference of each window this share touches. A window whose reference unit is another
  // rank's (at most the first one) is recomputed here: a window's log-probabilities are
  // scored x vocab floats (gigabytes for a large vocabulary), one window's forward pass is cheaper.
  std::map<std::size_t, EvalRun> ref;
  PrefixCache prefixes(job, begin, end);
  bool base_mismatch = false;  // assemble() fails every recipe with compare()'s error
  if (job.base) {
    std::size_t offset = 0, total = 0;
    for (std::size_t w = 0; w < win.count(); ++w) total += win.scored(w, score_all);
    if (job.base->scored() != total || job.base->vocab != static_cast<std::size_t>(job.model.config.vocab_size))
      base_mismatch = true;
    for (std::size_t w = 0; w < w1; ++w) {
      const std::size_t k = win.scored(w, score_all);
      if (w >= w0 && !base_mismatch) ref.emplace(w, slice(*job.base, offset, k));
      offset += k;
    }
  } else {
    const auto t0 = std::chrono::steady_clock::now();
    WindowEvaluator ev(job.model, job.tokens, find_recipe("fp32"), job.opt);
    double setup = seconds_since(t0);
    for (std::size_t w = w0; w < w1; ++w) {
      const auto t1 = std::chrono::steady_clock::now();
      EvalRun r;
      ev.run(w, r, nullptr, prefixes.reference_is_base() ? prefixes.tap(w) : ResidualTap{});
      if (mine(w, 0)) {
        SweepUnit u;
        u.window = w;
        u.run = 0;
        u.stats = position_stats(r, r);
        u.seconds = seconds_since(t1) + std::exchange(setup, 0.0);
        if (job.keep_reference) {
          u.reference.vocab = r.vocab;
          u.reference.targets = r.targets;
          u.reference.log_probs = r.log_probs;
        }
        out.push_back(std::move(u));
        step("fp32 reference");
      }
      r.tensor_errors.clear();
      r.logits.clear();
      ref.emplace(w, std::move(r));
    }
  }

  prefixes.fill(job);

  // Each recipe's evaluator, prepared at its first unit (a failed preparation fails its units).
  struct Member {
    std::size_t k = 0;
    std::optional<WindowEvaluator> ev;
    std::string failed;
    double setup = 0;
    bool tried = false;
  };
  const auto prepare = [&](Member& m, SweepUnit& u, std::size_t w) {
    if (m.tried) return;
    m.tried = true;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      m.ev.emplace(job.model, job.tokens, job.recipes[m.k - first_recipe], job.opt);
      if (w == 0) u.errors = m.ev->weight_errors();
    } catch (const Error& e) {
      m.failed = e.what();
    }
    m.setup = seconds_since(t0);
  };
  const auto run_one = [&](Member& m, SweepUnit& u, std::size_t w) {
    if (!m.failed.empty()) {
      u.error = m.failed;
      return;
    }
    try {
      EvalRun r;
      const std::optional<WindowPrefix> prefix = prefixes.find(job, m.k - first_recipe, w);
      auto errors = m.ev->run(w, r, prefix ? &*prefix : nullptr);
      u.errors.insert(u.errors.end(), errors.begin(), errors.end());
      if (!base_mismatch) u.stats = position_stats(ref.at(w), r);
    } catch (const Error& e) {
      u.error = e.what();
    }
  };
  // Recipes stacked per window: sensitivity's over an identity base, resuming at the same layer
  // inside the model; as many as the memory for their logits allows (a window's T x vocab each,
  // twice: the evaluator's own and the stacked head's output).
  const auto n_layers = static_cast<std::size_t>(job.model.config.n_layers), vocab = static_cast<std::size_t>(job.model.config.vocab_size);
  const auto stackable = [&](std::size_t k) {
    const std::size_t i = k - first_recipe;
    return job.only_resume_layer && job.prefix_base->is_identity() && resumes(job, i) && job.resume[i] < n_layers;
  };
  const std::size_t per_member = 8 * win.ctx * vocab, cap = std::clamp<std::size_t>((std::size_t{256} << 20) / per_member, 1, 32);

  for (std::size_t k = first_recipe; k < runs;) {
    std::size_t k2 = k + 1;
    if (stackable(k))
      while (k2 < runs && k2 - k < cap && stackable(k2) && job.resume[k2 - first_recipe] == job.resume[k - first_recipe]) ++k2;
    std::vector<Member> group(k2 - k);
    for (std::size_t j = 0; j < group.size(); ++j) group[j].k = k + j;
    for (std::size_t w = w0; w < w1; ++w) {
      std::vector<Member*> members;
      std::vector<SweepUnit> units;
      for (Member& m : group) {
        if (!mine(w, m.k)) continue;
        SweepUnit u;
        u.window = w;
        u.run = m.k;
        prepare(m, u, w);
        members.push_back(&m);
        units.push_back(std::move(u));
      }
      const auto t1 = std::chrono::steady_clock::now();
      // Stacked when two or more are ready on this window's prefix; else (or if that throws) one by one.
      std::vector<std::size_t> ready;
      for (std::size_t j = 0; j < members.size(); ++j)
        if (members[j]->failed.empty()) ready.push_back(j);
      const std::optional<WindowPrefix> prefix = ready.size() > 1 ? prefixes.find(job, members[ready[0]]->k - first_recipe, w)
                                                                   : std::nullopt;
      bool stacked = false;
      if (prefix) {
        try {
          std::vector<WindowEvaluator*> evs;
          for (std::size_t j : ready) evs.push_back(&*members[j]->ev);
          std::vector<EvalRun> r(evs.size());
          const auto errors = WindowEvaluator::run_stacked(evs, w, r, *prefix);
          for (std::size_t i = 0; i < ready.size(); ++i) {
            SweepUnit& u = units[ready[i]];
            u.errors.insert(u.errors.end(), errors[i].begin(), errors[i].end());
            if (!base_mismatch) u.stats = position_stats(ref.at(w), r[i]);
          }
          stacked = true;
        } catch (const Error&) {  // run them one by one: each unit gets its own error
        }
      }
      const double shared = stacked ? seconds_since(t1) / static_cast<double>(members.size()) : 0.0;
      for (std::size_t j = 0; j < members.size(); ++j) {
        const auto t2 = std::chrono::steady_clock::now();
        if (!stacked || !members[j]->failed.empty()) run_one(*members[j], units[j], w);
        units[j].seconds = seconds_since(t2) + shared + std::exchange(members[j]->setup, 0.0);
        out.push_back(std::move(units[j]));
        step(job.recipes[members[j]->k - first_recipe].name);
      }
    }
    k = k2;
  }
  return out;
}

ModelSweep assemble(const SweepJob& job, std::vector<SweepUnit> units) {
  const std::size_t runs = job.runs(), first_recipe = job.base ? 0 : 1;
  std::size_t windows = 0;
  std::string invalid;  // with a base: the tokens or options every recipe's evaluate() rejects
  try {
    const Windows win = windows_for(job.model, job.tokens, job.opt);
    windows = win.count();
  } catch (const Error& e) {
    if (!job.base) throw;
    invalid = e.what();
  }
  std::vector<SweepUnit*> at(windows * runs, nullptr);
  for (auto& u : units) {
    const std::size_t i = u.window * runs + u.run;
    if (u.window >= windows || u.run >= runs || at[i]) throw Error("sweep: a rank's results do not fit the sweep");
    at[i] = &u;
  }
  for (const SweepUnit* u : at)
    if (!u) throw Error("sweep: a unit of work is missing from the ranks' results");

  ModelSweep sweep;
  sweep.tokens = job.tokens.size();
  sweep.ctx = job.opt.ctx > 0 ? job.opt.ctx
                              : static_cast<int>(std::min<std::size_t>(job.model.config.seq_len, job.tokens.size()));
  sweep.score_all = job.opt.score_all;
  Comparison self;
  if (job.base) {
    sweep.reference = "base logits";
    sweep.scored = job.base->scored();
    self = compare(*job.base, *job.base);
  } else {
    PositionStats s;
    for (std::size_t w = 0; w < windows; ++w) {
      const SweepUnit& u = *at[w * runs];
      s.append(u.stats);
      sweep.ref_seconds += u.seconds;
      if (job.keep_reference) {
        EvalRun& r = sweep.reference_run;
        r.vocab = u.reference.vocab;
        r.targets.insert(r.targets.end(), u.reference.targets.begin(), u.reference.targets.end());
        r.log_probs.insert(r.log_probs.end(), u.reference.log_probs.begin(), u.reference.log_probs.end());
      }
    }
    sweep.scored = s.tokens;
    self = summarize(std::move(s));
  }
  sweep.ref_ppl = self.ppl;
  sweep.ref_ppl_se = self.ppl_se;
  sweep.ref_nonfinite = self.nonfinite;

  // compare()'s error when the base logits do not cover these tokens: every recipe fails with it.
  std::string mismatch;
  if (job.base && invalid.empty()) {
    const std::size_t vocab = static_cast<std::size_t>(job.model.config.vocab_size);
    const Windows win = windows_for(job.model, job.tokens, job.opt);
    std::size_t total = 0;
    for (std::size_t w = 0; w < windows; ++w) total += win.scored(w, job.opt.score_all);
    if (job.base->vocab != vocab || job.base->scored() != total) {
      EvalRun q;
      q.vocab = vocab;
      q.targets.assign(total, 0);
      try {
        position_stats(*job.base, q);
      } catch (const Error& e) {
        mismatch = e.what();
      }
    }
  }

  for (std::size_t k = first_recipe; k < runs; ++k) {
    RecipeResult r;
    r.recipe = job.recipes[k - first_recipe].name;
    r.note = job.recipes[k - first_recipe].note;
    PositionStats s;
    ErrorLog log;
    for (std::size_t w = 0; w < windows; ++w) {
      const SweepUnit& u = *at[w * runs + k];
      r.seconds += u.seconds;
      if (!r.error.empty()) continue;
      r.error = u.error;  // the first window that failed, as one process running them in order
      s.append(u.stats);
      for (const auto& e : u.errors) log.add(e);
    }
    if (!invalid.empty()) r.error = invalid;
    if (r.error.empty()) r.error = mismatch;
    if (r.error.empty()) {
      r.cmp = summarize(std::move(s));
      r.tensor_errors = log.entries();
    }
    sweep.results.push_back(std::move(r));
  }

  // Stable by run order (std::stable_sort's libstdc++ 12 buffer is deprecated for clang 19).
  std::vector<std::size_t> order(sweep.results.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) {
    const RecipeResult &a = sweep.results[i], &b = sweep.results[j];
    const int ra = order_group(a), rb = order_group(b);
    if (ra != rb) return ra < rb;
    if (ra == 0 && a.cmp.kld_mean != b.cmp.kld_mean) return a.cmp.kld_mean < b.cmp.kld_mean;
    return i < j;
  });
  std::vector<RecipeResult> sorted;
  for (const std::size_t i : order) sorted.push_back(std::move(sweep.results[i]));
  sweep.results = std::move(sorted);
  return sweep;
}

std::vector<std::uint8_t> pack(const std::vector<SweepUnit>& units) {
  dist::ByteWriter w;
  w.pod<std::uint64_t>(units.size());
  for (const auto& u : units) {
    w.pod(u.window);
    w.pod(u.run);
    w.vec(u.stats.nll_q);
    w.vec(u.stats.nll_ref);
    w.vec(u.stats.kld);
    w.vec(u.stats.dp);
    w.pod<std::uint64_t>(u.stats.tokens);
    w.pod<std::uint64_t>(u.stats.nonfinite);
    w.pod<std::uint64_t>(u.stats.same_top1);
    w.pod<std::uint64_t>(u.errors.size());
    for (const auto& e : u.errors) {
      w.str(e.point);
      w.pod<std::int64_t>(e.layer);
      w.pod(e.signal);
      w.pod(e.noise);
      w.pod<std::uint64_t>(e.count);
      w.pod<std::uint64_t>(e.nonfinite);
    }
    w.pod(u.seconds);
    w.str(u.error);
    w.pod<std::uint64_t>(u.reference.vocab);
    w.vec(u.reference.targets);
    w.vec(u.reference.log_probs);
  }
  return std::move(w.out);
}

std::vector<SweepUnit> unpack(std::span<const std::uint8_t> bytes) {
  dist::ByteReader r(bytes, "sweep: a rank's results are malformed");
  const auto n = r.pod<std::uint64_t>();
  std::vector<SweepUnit> units;
  for (std::uint64_t i = 0; i < n; ++i) {
    SweepUnit u;
    u.window = r.pod<std::uint64_t>();
    u.run = r.pod<std::uint64_t>();
    u.stats.nll_q = r.vec<double>();
    u.stats.nll_ref = r.vec<double>();
    u.stats.kld = r.vec<double>();
    u.stats.dp = r.vec<double>();
    u.stats.tokens = static_cast<std::size_t>(r.pod<std::uint64_t>());
    u.stats.nonfinite = static_cast<std::size_t>(r.pod<std::uint64_t>());
    u.stats.same_top1 = static_cast<std::size_t>(r.pod<std::uint64_t>());
    const auto m = r.pod<std::uint64_t>();
    for (std::uint64_t j = 0; j < m; ++j) {
      TensorError e;
      e.point = r.str();
      e.layer = static_cast<int>(r.pod<std::int64_t>());
      e.signal = r.pod<double>();
      e.noise = r.pod<double>();
      e.count = static_cast<std::size_t>(r.pod<std::uint64_t>());
      e.nonfinite = static_cast<std::size_t>(r.pod<std::uint64_t>());
      u.errors.push_back(std::move(e));
    }
    u.seconds = r.pod<double>();
    u.error = r.str();
    u.reference.vocab = static_cast<std::size_t>(r.pod<std::uint64_t>());
    u.reference.targets = r.vec<int>();
    u.reference.log_probs = r.vec<float>();
    const std::size_t k = u.stats.kld.size();
    if (u.stats.nll_q.size() != k || u.stats.nll_ref.size() != k || u.stats.dp.size() != k)
      r.bad();
    units.push_back(std::move(u));
  }
  if (!r.done()) r.bad();
  return units;
}

ModelSweep run_split(const SweepJob& job, int ranks, const SweepProgress& progress) {
  const int me = dist::rank();
  ranks = std::clamp(ranks, 1, dist::size());
  const std::size_t n = job.units();  // throws the reference's error on every rank alike
  const dist::Range share = me < ranks ? dist::share(n, me, ranks) : dist::Range{};
  std::vector<SweepUnit> mine = run_units(job, share.begin, share.end, progress);
  if (progress) progress("done", 1.0);
  if (dist::size() == 1) return assemble(job, std::move(mine));
  const auto all = dist::gather_to_root(pack(mine));
  if (me != 0) {
    ModelSweep settings;
    settings.tokens = job.tokens.size();
    settings.score_all = job.opt.score_all;
    return settings;
  }
  mine.clear();
  for (const auto& bytes : all) {
    auto units = unpack(bytes);
    std::move(units.begin(), units.end(), std::back_inserter(mine));
  }
  return assemble(job, std::move(mine));
}

}  // namespace lowp::accuracy::detail
