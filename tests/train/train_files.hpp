// Files for the training tests: a fresh temporary folder per test, a small corpus a byte-level
// model learns in a few dozen steps, and whole-file reads for bitwise comparisons.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "train/trainer.hpp"

namespace lowp::test {

// <tmp>/lowp_<suite>_<pid>/<name>, emptied.
inline std::filesystem::path train_temp_dir(const std::string& suite, const std::string& name) {
  const auto d = std::filesystem::temp_directory_path() / ("lowp_" + suite + "_" + std::to_string(::getpid())) / name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// A few kilobytes of repetitive English (written once per process).
inline std::filesystem::path train_corpus() {
  const auto p = std::filesystem::temp_directory_path() / ("lowp_train_corpus_" + std::to_string(::getpid()) + ".txt");
  if (!std::filesystem::exists(p)) {
    std::ofstream f(p);
    const char* words[] = {"the ", "quick ", "brown ", "fox ", "jumps ", "over ", "a ", "lazy ", "dog. "};
    for (int i = 0; i < 1200; ++i) f << words[(i * 7 + i / 9) % 9];
  }
  return p;
}

// DIR/log.csv without its tokens_per_second column (the 6th: wall-clock speed), for bitwise
// comparisons of two runs.
inline std::string log_without_speed(const std::filesystem::path& dir) {
  std::istringstream in(slurp(dir / "log.csv"));
  std::string all;
  for (std::string line; std::getline(in, line);) {
    std::istringstream cells(line);
    int col = 0;
    for (std::string c; std::getline(cells, c, ','); ++col)
      if (col != 5) all += c + ",";
    all += "\n";
  }
  return all;
}

// The run's train_loss column (DIR/log.csv, the rows after the header).
inline std::vector<double> train_losses(const std::filesystem::path& dir) {
  std::ifstream f(dir / "log.csv");
  std::string line;
  std::getline(f, line);
  std::vector<double> v;
  while (std::getline(f, line)) v.push_back(std::stod(line.substr(line.find(',') + 1)));
  return v;
}

// The tiny run the resume tests kill and continue (ctx 32, batch 4, eval every 10, a checkpoint
// every 5 steps, 20 steps) on train_corpus(), writing into `out`.
inline lowp::accuracy::train::TrainOptions tiny_resume_options(const std::filesystem::path& out, const std::string& recipe) {
  lowp::accuracy::train::TrainOptions o;
  o.corpus = train_corpus().string();
  o.recipe = recipe;
  o.config = lowp::accuracy::train::named_config("tiny");
  o.config.seq_len = 32;
  o.batch = 4;
  o.lr = 3e-3;
  o.seed = 7;
  o.eval_every = 10;
  o.save_every = 5;
  o.steps = 20;
  o.out = out.string();
  return o;
}

}  // namespace lowp::test
