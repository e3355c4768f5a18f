// Processes and collectives behind one narrow interface (as MLX's distributed GroupImpl):
// an MPI implementation for CPUs today, NCCL later. dist/ knows nothing of models,
// tokenizers or the Trainer; the Trainer drives it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace strata::dist {

// Where this process sits, as the launcher described it in the environment.
struct Layout {
  int rank = 0, world_size = 1;
  int local_rank = 0, local_world_size = 1;
  std::string source = "single process";  // "OpenMPI", "Slurm", "torchrun env", "single process"
  std::string describe() const;           // one line for the start-of-run banner
};

// Reads OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE}, else SLURM_{PROCID,NTASKS,LOCALID,
// NTASKS_PER_NODE}, else RANK / WORLD_SIZE / LOCAL_RANK / LOCAL_WORLD_SIZE; else one process.
// Inconsistent values (rank >= world size, non-numbers) are an error naming the variable.
Layout detect_layout();

// A point-to-point message in flight (Communicator::isend / irecv). wait() returns once the
// message has completed: a send's buffer may then be reused, a receive's read. Destroying a
// request that has not completed waits for it first (the buffer must outlive the request).
class Request {
 public:
  virtual ~Request() = default;
  virtual void wait() = 0;
  virtual bool test() = 0;  // completed? never blocks; drives MPI's progress
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Every collective names itself in the diagnostics of a timeout (`what`, e.g. "gradient
  // bucket 3"). All are blocking; call them from one thread at a time per communicator.
  virtual void all_reduce_sum(float* data, size_t n, const char* what) = 0;
  virtual void all_reduce_sum(double* data, size_t n, const char* what) = 0;
  // in: size() * n_per_rank values; out: this rank's n_per_rank-sized slice of the sum.
  virtual void reduce_scatter_sum(const float* in, float* out, size_t n_per_rank, const char* what) = 0;
  // out: size() * n_per_rank values, rank r's block at r * n_per_rank.
  virtual void all_gather(const float* in, float* out, size_t n_per_rank, const char* what) = 0;
  // The sum over ranks of data[0, n) lands in `root`'s data (in place); the others' data is
  // left as it was. ZeRO reduces each gradient bucket to the rank that owns its slice.
  virtual void reduce_sum(float* data, size_t n, int root, const char* what) = 0;
  // In place, blocks of unequal size: rank r's counts[r] values at data + counts[0] + ... +
  // counts[r-1] are copied to every rank (ZeRO's parameter all-gather; the last slice of a
  // flat buffer is shorter).
  virtual void all_gather_v(float* data, const std::vector<size_t>& counts, const char* what) = 0;
  // Variable-sized byte blocks from every rank, in rank order (distributed eval results).
  virtual std::vector<std::string> all_gather_bytes(const std::string& mine, const char* what) = 0;
  virtual void broadcast(void* data, size_t bytes, int root, const char* what) = 0;
  virtual void send(const void* data, size_t bytes, int peer, int tag) = 0;
  virtual void recv(void* data, size_t bytes, int peer, int tag) = 0;
  // Non-blocking send / receive: they return at once and the message moves while the caller
  // computes (pipeline stages pass activations this way). A receive must be posted with the
  // sender's byte count and tag. The buffer belongs to the message until wait() returns.
  virtual std::unique_ptr<Request> isend(const void* data, size_t bytes, int peer, int tag) = 0;
  virtual std::unique_ptr<Request> irecv(void* data, size_t bytes, int peer, int tag) = 0;
  virtual void barrier(const char* what) = 0;
  // A barrier in which a waiting rank sleeps between polls instead of spinning in MPI: for
  // ranks that reach a point at very different times (pipeline stages at the end of a step),
  // where a busy wait would take a core from ranks still computing on the same host.
  virtual void quiet_barrier(const char* what) = 0;
  // A sub-group of the ranks passing the same color, ordered by key (MPI_Comm_split).
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;
  // Stops every process of the job now, with exit code `code` (after printing `why`).
  [[noreturn]] virtual void abort(const std::string& why, int code) = 0;
};

// One process, no MPI: collectives are copies (or nothing). What a plain `strata train` uses.
std::unique_ptr<Communicator> make_single_process_communicator();

// MPI_COMM_WORLD (initialising MPI with MPI_THREAD_MULTIPLE on first use). A collective
// that has not completed after `timeout_s` seconds aborts the job with a message naming the
// collective and the ranks that never entered it. Also installs the dead-rank handling:
// a rank that dies or exits with an error makes every other rank exit non-zero within a
// bounded time, naming the failed rank.
std::unique_ptr<Communicator> make_mpi_communicator(double timeout_s);

// Compares a fingerprint (e.g. a hash of the configuration and model files) across ranks;
// throws strata::Error listing the ranks whose `what` differs from rank 0's.
void check_same_on_all_ranks(Communicator& comm, const std::string& fingerprint, const std::string& what);

// Every rank will exit with `status` by agreement (they all stopped at the same point, e.g.
// an interruption after a checkpoint). Exiting with it then finalises MPI as status 0 does,
// instead of aborting the job as any other non-zero status does (docs/distributed.md).
void set_agreed_exit_status(int status);

}  // namespace strata::dist
