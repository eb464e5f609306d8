// The ranks of an MPI run (`mpirun -np N lowp ...`) and the few collectives lowp's sweeps and
// data-parallel training use, over MPI_COMM_WORLD. Built without MPI (LOWP_MPI off), or run
// without mpirun, there is one rank and every call is the identity on it. Only the thread that
// created the Session calls these (MPI_THREAD_FUNNELED; OpenMP stays inside a rank).
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace lowp::accuracy::dist {

// MPI_Init_thread in its constructor (when lowp was built with MPI and started by mpirun,
// mpiexec or srun), MPI_Finalize in its destructor. One in main(); library users who never
// create one, and a process started without a launcher, get a single rank.
class Session {
 public:
  Session(int& argc, char**& argv);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
};

bool built_with_mpi();
int rank();  // 0 without MPI
int size();  // 1 without MPI

// Ends the whole job after a rank failed: a rank that throws cannot wait for the others in a
// collective, and they would wait forever for it. Without MPI it returns.
void abort_job(int exit_code);

void barrier();
// Every rank passes its bytes; rank 0 gets them all in rank order (its own first), the others
// get an empty vector.
std::vector<std::vector<std::uint8_t>> gather_to_root(std::span<const std::uint8_t> mine);
// `bytes` of rank `root` replace every other rank's (sizes may differ).
void broadcast(std::vector<std::uint8_t>& bytes, int root = 0);
void broadcast(std::span<float> values, int root);
void broadcast(std::span<double> values, int root);
// Point to point, blocking; sizes must match on both sides. Tags are the caller's.
void send(std::span<const float> values, int to, int tag);
void receive(std::span<float> values, int from, int tag);
void send(std::span<const double> values, int to, int tag);
void receive(std::span<double> values, int from, int tag);

// The contiguous share [begin, end) of n items that rank r of `ranks` takes: the first n % ranks
// ranks take one more.
struct Range {
  std::size_t begin = 0, end = 0;
};
Range share(std::size_t n, int r, int ranks);

}  // namespace lowp::accuracy::dist
