#pragma once
// gpucomm's runtime: one object per process (PE). Construction bootstraps the job (collective
// over all PEs), picks the PE kind (a GPU PE drives one GPU; a host-memory PE uses no GPU),
// and creates the symmetric heap; destruction finalizes (collective). Host-side one-sided
// operations work on symmetric addresses returned by malloc/calloc. Failure semantics
// (ARCHITECTURE.md, "Failure semantics"): a PE whose start-up fails, that is destroyed while an
// exception unwinds, or one of whose waits failed, aborts the job instead of finalizing it, and
// once the job failed nothing waits for anybody.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "gpucomm/base/handle.hpp"
#include "gpucomm/base/ops.hpp"
#include "gpucomm/bootstrap/bootstrap.hpp"
#include "gpucomm/heap/symmetric_heap.hpp"
#include "gpucomm/runtime/team.hpp"

struct CUstream_st;

namespace gpucomm {

namespace detail {
struct ProxyState;
}
namespace proxy {
struct Descriptor;
}

// A CUDA stream (cudaStream_t), declared here so that this header does not need CUDA's.
using Stream = ::CUstream_st*;

enum class PeKind { host, gpu };

// A user buffer made reachable from every PE of the node (Runtime::register_buffer).
struct RegisteredBuffer {
  void* local = nullptr;
  size_t bytes = 0;
  std::vector<void*> peers;             // each PE's buffer as mapped here (nullptr: unreachable)
  void* const* device_peers = nullptr;  // the same table in device memory, for kernels
};

struct RuntimeOptions {
  // Join an explicit job (like a communicator init) instead of reading the environment.
  std::string unique_id;  // text form; requires rank and size
  int rank = -1;
  int size = -1;
  std::string device = "";  // "", "auto", "gpu" or "host"; "" reads GPUCOMM_DEVICE
  size_t heap_bytes = 0;    // 0 reads GPUCOMM_HEAP_SIZE
  // "", "auto", "direct", "proxy-cpu", "proxy-gpu" or "ucx"; "" reads GPUCOMM_TRANSPORT. Forces
  // the path of one-sided operations (see gpucomm/transport/transport.hpp).
  std::string transport = "";
};

// How this PE reaches the others (Runtime::transport_info).
struct TransportInfo {
  std::string kind;                 // the transport in force: auto, direct, proxy-cpu, proxy-gpu, ucx
  std::vector<std::string> routes;  // per PE: "direct", "host-copy", "copy-engine", "sm-agent", "ucx"
  std::string agent;                // "none", "cpu-proxy" or "gpu-agent"
  int proxy_threads = 0;
  int device_queues = 0;         // queues of device-side operations
  uint64_t executed = 0;         // entries the agent completed so far
  double proxy_cpu_seconds = 0;  // CPU time the proxy threads used so far
};

class Runtime {
 public:
  Runtime();
  explicit Runtime(const RuntimeOptions& opts);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // ---- identity ----
  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  int node_id() const { return node_of_[static_cast<size_t>(rank_)]; }
  int num_nodes() const { return num_nodes_; }
  int node_of(int pe) const;
  PeKind pe_kind() const { return kind_; }
  int device_id() const { return device_id_; }  // -1 for host-memory PEs
  const std::string& launcher() const { return launcher_; }
  std::string describe() const;

  // ---- teams ----
  const Team& world() const { return world_; }
  const Team& node() const { return node_; }
  // Collective over `parent`: PEs with the same color form a team, ordered by key then rank.
  // A negative color returns an invalid Team (not a member).
  Team split(const Team& parent, int color, int key);

  bootstrap::Bootstrap& bootstrap() { return *bootstrap_; }
  // The symmetric heap: shared host memory on host-memory PEs, device memory on GPU PEs
  // (addresses of GPU PEs' heaps are device addresses: use them in kernels and copies).
  heap::SymmetricHeap& heap();
  // Keeps this PE's heap memory mapped (not its use for communication) after the runtime is
  // closed, as long as the returned object lives: views of symmetric memory (Python arrays) hold
  // one, so using them after close() reads stale memory instead of crashing.
  std::shared_ptr<const void> heap_lease() const { return heap_; }
  // True once the job failed (another PE died or aborted, the store or the launcher vanished);
  // failure() says why, naming the PE that failed first.
  bool failed() const;
  std::string failure() const;
  // Fails the whole job now (every PE learns "rank R aborted: reason" within milliseconds, its
  // waits leave, kernels waiting on the device too) and closes this runtime without waiting for
  // anybody: later operations raise Errc::aborted. Not collective; does nothing once closed, and
  // names nobody new once the job failed (after a peer failure this thread raised, it first
  // gives the job's record up to 1 s to name that peer).
  void abort(const std::string& reason);
  // True after abort() (called, or done by the destructor or a failed start-up).
  bool aborted() const { return !aborted_.empty(); }
  // The transport in force and the path to each PE.
  TransportInfo transport_info() const;

  // ---- symmetric memory (collective over the world: same arguments on every PE) ----
  void* malloc(size_t bytes);
  void* calloc(size_t count, size_t size);
  void* aligned_alloc(size_t alignment, size_t bytes);
  void free(void* ptr);
  template <class T>
  T* alloc(size_t count) {
    return static_cast<T*>(aligned_alloc(alignof(T) > 256 ? alignof(T) : 256, count * sizeof(T)));
  }
  // Direct address of `pe`'s copy of symmetric object `ptr`, usable for loads and stores from
  // this process (from its kernels on GPU PEs), or nullptr when `pe` is not directly reachable.
  void* ptr(const void* sym, int pe) const;

  // ---- one-sided operations (host side) ----
  void put(void* dst, const void* src, size_t bytes, int pe);
  void get(void* dst, const void* src, size_t bytes, int pe);
  template <class T>
  void p(T* dst, std::type_identity_t<T> value, int pe) {
    put(dst, &value, sizeof(T), pe);
  }
  template <class T>
  T g(const T* src, int pe) {
    T v;
    get(&v, src, sizeof(T), pe);
    return v;
  }
  // Data first, then the signal: whoever sees the signal sees the data.
  void put_signal(void* dst, const void* src, size_t bytes, uint64_t* sig, uint64_t value, SignalOp op, int pe);
  void signal(uint64_t* sig, uint64_t value, SignalOp op, int pe);
  uint64_t signal_fetch(const uint64_t* sig);
  // Waits until the local symmetric word satisfies `cmp value`; returns the value seen.
  // Raises Errc::timeout (after GPUCOMM_TIMEOUT) or Errc::peer_failure with who waited for what.
  template <class T>
  T wait_until(T* ivar, Cmp cmp, std::type_identity_t<T> value);
  template <class T>
  bool test(T* ivar, Cmp cmp, std::type_identity_t<T> value);
  // wait_until on a signal word, named as in the device API.
  uint64_t signal_wait_until(uint64_t* sig, Cmp cmp, uint64_t value) { return wait_until(sig, cmp, value); }

  // Atomics on `pe`'s copy of a symmetric word (T: int32_t, uint32_t, int64_t, uint64_t). Values
  // take the word's type (literals work: `atomic_fetch_add(ctr, 1, pe)` on a uint64_t*), as in the
  // device API.
  template <class T>
  T atomic_fetch(const T* dst, int pe);
  template <class T>
  void atomic_set(T* dst, std::type_identity_t<T> value, int pe);
  template <class T>
  T atomic_fetch_add(T* dst, std::type_identity_t<T> value, int pe);
  template <class T>
  void atomic_add(T* dst, std::type_identity_t<T> value, int pe) {
    atomic_fetch_add(dst, value, pe);
  }
  template <class T>
  T atomic_fetch_inc(T* dst, int pe) {
    return atomic_fetch_add(dst, T(1), pe);
  }
  template <class T>
  void atomic_inc(T* dst, int pe) {
    atomic_fetch_add(dst, T(1), pe);
  }
  template <class T>
  T atomic_swap(T* dst, std::type_identity_t<T> value, int pe);
  template <class T>  // returns the old value; the swap happened when it equals `expected`
  T atomic_compare_swap(T* dst, std::type_identity_t<T> expected, std::type_identity_t<T> desired, int pe);
  template <class T>
  T atomic_fetch_and(T* dst, std::type_identity_t<T> value, int pe);
  template <class T>
  T atomic_fetch_or(T* dst, std::type_identity_t<T> value, int pe);
  template <class T>
  T atomic_fetch_xor(T* dst, std::type_identity_t<T> value, int pe);

  // Orders this PE's earlier puts and signals to each PE before later ones.
  void fence();
  // Completes every earlier operation of this PE.
  void quiet();
  // Collective over the team: quiet, then no PE leaves before all arrived.
  void barrier(const Team& team);
  void barrier_all() { barrier(world_); }

  // ---- GPU PEs ----
  // What kernels need to use the device API (gpucomm/device/gpucomm_device.cuh); pass it by
  // value. Raises Errc::unsupported on host-memory PEs. The inline call passes the version of the
  // headers the caller was compiled with: a mismatch with the library raises
  // Errc::invalid_argument instead of handing kernels a handle they would misread.
  DeviceHandle device_handle() const { return device_handle_checked(kHandleVersion, sizeof(DeviceHandle)); }
  DeviceHandle device_handle_checked(uint32_t header_version, size_t header_bytes) const;
  // `team` as kernels see it (gpucomm/base/team.hpp; device::barrier(c, h, team)). On GPU
  // PEs its member table is device memory; on host-memory PEs host memory. The TeamHandle stays
  // valid while the Team lives. Versions are checked as for device_handle().
  TeamHandle device_team(const Team& team) const {
    return device_team_checked(team, kHandleVersion, sizeof(TeamHandle));
  }
  TeamHandle device_team_checked(const Team& team, uint32_t header_version, size_t header_bytes) const;
  // Raises the failure a kernel of this PE recorded (a device wait that timed out: Errc::timeout;
  // a checked-mode argument fault: Errc::invalid_argument; a wait that left because the job failed:
  // Errc::peer_failure), naming rank, operation, address, expected and seen values, block and
  // thread. Does nothing when no failure was recorded. A failure of this PE's own (not a wait that
  // left because the job failed) first fails the whole job (Bootstrap::abort with the record's
  // text): the kernel trapped, the GPU is unusable, and the peers' device and host waits leave
  // within milliseconds naming this PE. Finalize does the same when nobody called it.
  void check_device() const;
  // The stream the host-side operations of GPU PEs run on.
  Stream stream() const;
  // Collective: makes a device buffer (cudaMalloc'd, or inside the symmetric heap) reachable from
  // the other PEs of the node. Same byte count on every PE. deregister_buffer is collective too.
  const RegisteredBuffer& register_buffer(void* ptr, size_t bytes);
  void deregister_buffer(void* ptr);

  // Stream-ordered one-sided operations (GPU PEs): enqueued as kernels on `stream`, never
  // synchronizing with the host, so CUDA graphs can capture them. Local buffers must be device
  // memory (the copies are SM kernels). Errors and device waits
  // that time out show up at the next synchronization (then call check_device()).
  void put_on_stream(void* dst, const void* src, size_t bytes, int pe, Stream stream);
  void get_on_stream(void* dst, const void* src, size_t bytes, int pe, Stream stream);
  void put_signal_on_stream(void* dst, const void* src, size_t bytes, uint64_t* sig, uint64_t value, SignalOp op,
                            int pe, Stream stream);
  void signal_on_stream(uint64_t* sig, uint64_t value, SignalOp op, int pe, Stream stream);
  void wait_until_on_stream(uint64_t* sig, Cmp cmp, uint64_t value, Stream stream);
  // Barrier over all PEs (device dissemination barrier), ordered after earlier work on `stream`.
  void barrier_on_stream(Stream stream);

 private:
  void init(const RuntimeOptions& opts);
  void agree_on_heap(size_t heap_bytes);
  void finalize();
  void release();                             // frees everything without waiting (finalize's end, abort)
  void check_open(const char* op) const;      // raises once closed, aborted or the job failed
  bool device_record(DeviceDiag* out) const;  // GPU PEs: copies the device failure record, if any
  // The text of this PE's own device failure ("" when none, or when its kernel left because the
  // job failed elsewhere).
  std::string own_device_failure() const;
  void check_sym(const void* sym, size_t bytes, int pe, const char* op) const;  // PE and heap range
  char* remote(const void* sym, size_t bytes, int pe, const char* op) const;    // ... and the mapping
  template <class T>
  T host_atomic(AtomicOp op, const T* dst, T a, T b, int pe, const char* name);
  void check_symmetric_alloc(uint64_t call, size_t bytes, size_t alignment, size_t offset);
  void check_pe(int pe, const char* op) const;
  Team make_team(int slot, std::vector<int> members);
  void reset_team_slot(Team::State& s);  // device_team.cpp
  void host_barrier(Team::State& t);
  std::string barrier_laggards(const Team::State& t, uint64_t epoch) const;  // who holds a barrier up
  // GPU PEs (gpu_rma.cpp)
  void gpu_init();
  void gpu_sync(const char* op);  // waits for the host-operation stream; raises with the device record
  void gpu_read(void* out, const void* device_src, size_t bytes);
  void gpu_copy(void* dst, const void* src, size_t bytes, const char* op);
  void gpu_signal(uint64_t* sig, uint64_t value, SignalOp op, int pe);
  bool gpu_all_reachable() const;
  uint64_t gpu_atomic(AtomicOp op, unsigned width, void* dst, uint64_t operand, uint64_t compare, int pe,
                      const char* name);
  void gpu_device_barrier(const Team& team);
  template <class T>
  T gpu_wait_until(T* ivar, Cmp cmp, T value);
  // Proxy layer (proxy_setup.cpp, proxy_ops.cpp)
  void proxy_init(const RuntimeOptions& opts);
  void proxy_finalize();
  bool host_via_proxy(int pe) const;
  // Posts `d` to the host queue and waits for it; returns the ticket's result slot.
  uint64_t proxy_call(proxy::Descriptor d, const char* op, bool want_result = false);
  void proxy_quiet();

  std::unique_ptr<bootstrap::Bootstrap> bootstrap_;
  std::shared_ptr<heap::SymmetricHeap> heap_;  // shared with heap_lease() holders
  struct GpuState;
  std::unique_ptr<GpuState> gpu_;
  struct AllocatorState;
  std::unique_ptr<AllocatorState> alloc_;
  std::unique_ptr<detail::ProxyState> proxy_;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1, num_nodes_ = 1;
  std::vector<int> node_of_;
  PeKind kind_ = PeKind::host;
  int device_id_ = -1;
  std::string launcher_;
  std::string job_tag_;
  Team world_, node_;
  // Bitmap of synchronization slots held by live teams (0: world, 1: node); teams free theirs.
  std::shared_ptr<std::atomic<uint64_t>> team_slots_;
  int64_t timeout_ms_ = 0;
  bool finalized_ = false;
  std::string aborted_;        // the reason, once aborted
  int uncaught_at_start_ = 0;  // std::uncaught_exceptions() when constructed
};

}  // namespace gpucomm
