// TrainLog (train_log.hpp): log.csv and quant.csv of a `lowp train` run.
#include "train/train_log.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "file/atomic_file.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::accuracy::train {
namespace {

namespace fs = std::filesystem;

// Rewrites a CSV with `header` and, when resumed, its rows up to step `done`.
std::vector<std::string> reopen_csv(const std::string& path, const std::string& header, int done, std::ofstream& out) {
  std::string kept = header + "\n";
  std::vector<std::string> rows;
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

}  // namespace

std::string log_number(double v) {
  if (std::isnan(v)) return "";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::vector<std::pair<int, double>> TrainLog::open(const std::string& dir, int n_layers, bool comm_column, int done) {
  std::string header = "step,train_loss,val_loss,lr,grad_norm,tokens_per_second";
  for (int l = 0; l < n_layers; ++l) header += ",rms_g2_over_v_layer" + std::to_string(l);
  if (comm_column) header += ",grad_comm_sqnr_db";
  reopen_csv((fs::path(dir) / "quant.csv").string(), "step,layer,linear,gemm,operand,sqnr_db,saturated,flushed", done,
             quant_);
  std::vector<std::pair<int, double>> curve;
  for (const std::string& line : reopen_csv((fs::path(dir) / "log.csv").string(), header, done, log_)) {
    const auto c1 = line.find(','), c2 = line.find(',', c1 + 1), c3 = line.find(',', c2 + 1);
    if (c2 != std::string::npos && c3 > c2 + 1)  // an evaluated step
      curve.emplace_back(std::atoi(line.c_str()), std::atof(line.substr(c2 + 1, c3 - c2 - 1).c_str()));
  }
  return curve;
}

void TrainLog::operands(int step, std::span<const TrainLinearStats> layout, std::span<const double> total) {
  static constexpr const char* kGemm[3] = {"fwd", "dgrad", "wgrad"};
  static constexpr const char* kOperand[6] = {"X", "W", "dY", "W^T", "dY^T", "X^T"};
  std::size_t at = 3;
  for (const auto& s : layout)
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
             << log_number(o.sqnr_db()) << ',' << log_number(static_cast<double>(o.saturated) / n) << ','
             << log_number(static_cast<double>(o.flushed) / n) << '\n';
    }
  quant_.flush();
}

void TrainLog::row(const StepInfo& s, std::span<const double> rms, bool comm_column) {
  log_ << s.step << ',' << log_number(s.train_loss) << ',' << log_number(s.val_loss) << ',' << log_number(s.lr) << ','
       << log_number(s.grad_norm) << ',' << log_number(s.tokens_per_second);
  for (double r : rms) log_ << ',' << log_number(r);
  if (comm_column) log_ << ',' << log_number(s.grad_comm_sqnr_db);
  log_ << '\n';
  log_.flush();
}

}  // namespace lowp::accuracy::train
