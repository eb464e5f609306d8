#include "dist/comm.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <thread>

#include "lowp/numerics/error.hpp"

#ifdef LOWP_HAVE_MPI
#include <mpi.h>
#endif

namespace lowp::accuracy::dist {

Range share(std::size_t n, int r, int ranks) {
  const std::size_t R = static_cast<std::size_t>(std::max(ranks, 1)), i = static_cast<std::size_t>(r);
  const std::size_t base = n / R, extra = n % R;
  const std::size_t begin = i * base + std::min(i, extra);
  return {begin, begin + base + (i < extra ? 1 : 0)};
}

#ifdef LOWP_HAVE_MPI
namespace {

bool running() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw Error(std::string("MPI ") + what + " failed (code " + std::to_string(rc) + ")");
}

// MPI counts are int: large buffers go in pieces.
constexpr std::size_t kChunk = static_cast<std::size_t>(INT_MAX) / 8;

template <class T>
void send_chunks(const T* p, std::size_t n, MPI_Datatype type, int to, int tag) {
  for (std::size_t at = 0; at < n; at += kChunk)
    check(MPI_Send(p + at, static_cast<int>(std::min(kChunk, n - at)), type, to, tag, MPI_COMM_WORLD), "send");
}
template <class T>
void receive_chunks(T* p, std::size_t n, MPI_Datatype type, int from, int tag) {
  for (std::size_t at = 0; at < n; at += kChunk)
    check(MPI_Recv(p + at, static_cast<int>(std::min(kChunk, n - at)), type, from, tag, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE),
          "receive");
}
template <class T>
void broadcast_chunks(T* p, std::size_t n, MPI_Datatype type, int root) {
  for (std::size_t at = 0; at < n; at += kChunk)
    check(MPI_Bcast(p + at, static_cast<int>(std::min(kChunk, n - at)), type, root, MPI_COMM_WORLD), "broadcast");
}

// Started by a process manager (mpirun/mpiexec of Open MPI or MPICH, or srun with PMI/PMIx)?
// Those set one of these in every rank. A lowp started by hand is one rank and skips MPI_Init:
// Open MPI's singleton start-up costs about 0.3 s, which every `lowp cast` would pay.
bool launched_by_mpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

}  // namespace

Session::Session(int& argc, char**& argv) {
  int provided = 0;
  if (!running() && launched_by_mpirun()) MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
}
Session::~Session() {
  if (running()) MPI_Finalize();
}

bool built_with_mpi() { return true; }
int rank() {
  int r = 0;
  if (running()) MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int size() {
  int n = 1;
  if (running()) MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}
void abort_job(int exit_code) {
  if (running() && size() > 1) MPI_Abort(MPI_COMM_WORLD, exit_code);
}
void barrier() {
  if (size() > 1) check(MPI_Barrier(MPI_COMM_WORLD), "barrier");
}

// A barrier whose waiting sleeps between polls: a job's ranks reach its final gather at very
// different times (one recipe's runs against another's), and Open MPI's blocking calls spin a
// whole core meanwhile, taken from the ranks still working when cores are shared. The wait ends
// at most 5 ms late, once per job.
namespace {
void polite_barrier() {
  MPI_Request req;
  check(MPI_Ibarrier(MPI_COMM_WORLD, &req), "barrier");
  for (auto pause = std::chrono::microseconds(50);; pause = std::min(2 * pause, std::chrono::microseconds(5000))) {
    int done = 0;
    check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "barrier test");
    if (done) return;
    std::this_thread::sleep_for(pause);
  }
}
}  // namespace

std::vector<std::vector<std::uint8_t>> gather_to_root(std::span<const std::uint8_t> mine) {
  const int n = size(), me = rank();
  std::vector<std::vector<std::uint8_t>> all;
  if (me == 0) all.emplace_back(mine.begin(), mine.end());
  if (n == 1) return all;
  polite_barrier();
  const std::uint64_t len = mine.size();
  if (me != 0) {
    check(MPI_Send(&len, 1, MPI_UINT64_T, 0, 1, MPI_COMM_WORLD), "send");
    send_chunks(mine.data(), mine.size(), MPI_UINT8_T, 0, 2);
    return all;
  }
  for (int r = 1; r < n; ++r) {
    std::uint64_t m = 0;
    check(MPI_Recv(&m, 1, MPI_UINT64_T, r, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "receive");
    all.emplace_back(static_cast<std::size_t>(m));
    receive_chunks(all.back().data(), all.back().size(), MPI_UINT8_T, r, 2);
  }
  return all;
}

void broadcast(std::vector<std::uint8_t>& bytes, int root) {
  if (size() == 1) return;
  std::uint64_t len = bytes.size();
  check(MPI_Bcast(&len, 1, MPI_UINT64_T, root, MPI_COMM_WORLD), "broadcast");
  bytes.resize(static_cast<std::size_t>(len));
  broadcast_chunks(bytes.data(), bytes.size(), MPI_UINT8_T, root);
}
void broadcast(std::span<float> values, int root) {
  if (size() > 1) broadcast_chunks(values.data(), values.size(), MPI_FLOAT, root);
}
void broadcast(std::span<double> values, int root) {
  if (size() > 1) broadcast_chunks(values.data(), values.size(), MPI_DOUBLE, root);
}
void send(std::span<const float> v, int to, int tag) { send_chunks(v.data(), v.size(), MPI_FLOAT, to, tag); }
void receive(std::span<float> v, int from, int tag) { receive_chunks(v.data(), v.size(), MPI_FLOAT, from, tag); }
void send(std::span<const double> v, int to, int tag) { send_chunks(v.data(), v.size(), MPI_DOUBLE, to, tag); }
void receive(std::span<double> v, int from, int tag) { receive_chunks(v.data(), v.size(), MPI_DOUBLE, from, tag); }

#else  // one rank

Session::Session(int&, char**&) {}
Session::~Session() = default;
bool built_with_mpi() { return false; }
int rank() { return 0; }
int size() { return 1; }
void abort_job(int) {}
void barrier() {}
std::vector<std::vector<std::uint8_t>> gather_to_root(std::span<const std::uint8_t> mine) {
  return {std::vector<std::uint8_t>(mine.begin(), mine.end())};
}
void broadcast(std::vector<std::uint8_t>&, int) {}
void broadcast(std::span<float>, int) {}
void broadcast(std::span<double>, int) {}
namespace {
[[noreturn]] void no_peer() { throw Error("point-to-point communication needs lowp built with MPI (LOWP_MPI)"); }
}  // namespace
void send(std::span<const float>, int, int) { no_peer(); }
void receive(std::span<float>, int, int) { no_peer(); }
void send(std::span<const double>, int, int) { no_peer(); }
void receive(std::span<double>, int, int) { no_peer(); }

#endif

}  // namespace lowp::accuracy::dist
