#include "gpucomm/core/env.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "gpucomm/core/error.hpp"
#include "gpucomm/core/log.hpp"

extern char** environ;

namespace gpucomm::env {
namespace {
// The one table of GPUCOMM_* variables. docs/ENV.md must list exactly these (a test checks).
constexpr Variable kVariables[] = {
    {"GPUCOMM_LOG_LEVEL", "warn", "Log level: error, warn, info, debug or trace. Messages carry a rank prefix."},
    {"GPUCOMM_TIMEOUT", "120",
     "Limit in seconds for every blocking wait, on host and device (0 disables; otherwise at least 0.001). A wait that "
     "runs past it fails with a record of who waited for what, and the PE aborts the job."},
    {"GPUCOMM_DEVICE", "auto",
     "PE kind: `auto` (a GPU PE when a GPU exists, else a host-memory PE), `gpu` (fail without a GPU) or `host` "
     "(host-memory PE even when GPUs exist)."},
    {"GPUCOMM_DEVICE_ID", "",
     "GPU index this PE drives; default local rank modulo the number of visible GPUs. Set by `gpucomm run`."},
    {"GPUCOMM_RANK", "", "This PE's rank in the job. Set by `gpucomm run`."},
    {"GPUCOMM_SIZE", "", "Number of PEs in the job. Set by `gpucomm run`."},
    {"GPUCOMM_LOCAL_RANK", "", "This PE's rank among the PEs of its node. Set by `gpucomm run`."},
    {"GPUCOMM_LOCAL_SIZE", "", "Number of PEs on this node. Set by `gpucomm run`."},
    {"GPUCOMM_UNIQUE_ID", "",
     "Bootstrap unique id (`gpucomm1:HOST:PORT:TOKEN`): where rank 0 serves the store and the token that authenticates "
     "peers. Set by `gpucomm run`."},
    {"GPUCOMM_BOOTSTRAP", "auto", "Bootstrap method: `auto`, `tcp` or `mpi` (only when built with MPI)."},
    {"GPUCOMM_BOOTSTRAP_ADDR", "",
     "HOST:PORT where rank 0 serves the bootstrap store when the job was started by mpirun, srun or torchrun without a "
     "unique id."},
    {"GPUCOMM_BOOTSTRAP_IFNAME", "",
     "Network interface whose address the bootstrap store binds (default: loopback for single-node jobs, the host's "
     "address otherwise)."},
    {"GPUCOMM_BOOTSTRAP_TIMEOUT", "30",
     "Seconds to keep retrying a bootstrap connection or rendezvous before giving up with the address in the message."},
    {"GPUCOMM_BOOTSTRAP_DIR", "/tmp",
     "Folder for the file rendezvous used by single-node jobs started by mpirun or srun without an address."},
    {"GPUCOMM_BOOTSTRAP_TOKEN", "",
     "Shared secret for jobs that bootstrap from GPUCOMM_BOOTSTRAP_ADDR or MASTER_ADDR (default: derived from the "
     "job's identity)."},
    {"GPUCOMM_BOOTSTRAP_LISTEN_FD", "",
     "Internal: a listening socket inherited from `gpucomm run` that rank 0 serves the store on."},
    {"GPUCOMM_LIFELINE", "",
     "Internal: `FD:PID`, the PE's end of the lifeline socket `gpucomm run` (process PID) holds the other end of: "
     "EOF fails the job; the launcher relays failures over it and the PE reports the first failure it knows of."},
    {"GPUCOMM_JOB_ID", "", "Job identity for the file rendezvous (default: from the launcher's own variables)."},
    {"GPUCOMM_HOSTNAME", "", "Overrides this process's node name, so one host can act as several nodes in tests."},
    {"GPUCOMM_BIN_DIR", "",
     "Folder where the `gpucomm` command looks for its tool programs (default: the package's _bin folder)."},
    {"GPUCOMM_ANCHORS_DIR", "",
     "Folder of the in-kernel anchor programs of `gpucomm bench coll --anchors` (built by "
     "bench/coll_anchors/build.sh; default: built from the source tree into a cache folder)."},
    {"GPUCOMM_TEST_SEED", "",
     "Tests only: replays a randomized test with this seed (each run draws a fresh one and prints it on failure)."},
    {"GPUCOMM_TEST_EXPECT_NVLINKS", "",
     "Tests only: the number of NVLink links every pair of GPUs must have (18 on the 2x H200 machine); unset, the "
     "topology tests only check that NVLink counts and peer access agree."},
    {"GPUCOMM_TRACES_DIR", "",
     "Tests only: folder of the shared reference traces (default: the first shared/traces folder beside the repository "
     "or above it); the trace tests skip with a reason when none is found."},
    {"GPUCOMM_HEAP_SIZE", "128M", "Bytes of symmetric heap per PE (K, M, G suffixes)."},
    {"GPUCOMM_HEAP_MAPPING", "auto",
     "How GPU PEs map each other's heaps: `vmm` (cuMemCreate, file descriptors passed over Unix sockets, cuMemMap), "
     "`ipc` (cudaMalloc + CUDA IPC handles) or `auto` (vmm when every PE supports it)."},
    {"GPUCOMM_TRANSPORT", "auto",
     "Forces the path of one-sided operations to every peer: `direct` (loads, stores and SM copies into mapped heaps), "
     "`proxy-cpu` (CPU proxy threads: copy engine or CPU copies), `proxy-gpu` (GPU service block: SM copies), `ucx` "
     "(UCX, also between PEs of one node) or `auto` (direct where reachable, UCX across nodes)."},
    {"GPUCOMM_PROXY_THREADS", "1",
     "CPU proxy threads per PE (the same on every PE when UCX is in use: each thread has its own UCX worker)."},
    {"GPUCOMM_PROXY_CPUS", "",
     "CPUs the proxy threads are pinned to, one per thread in turn (`2,3` or `4-7`); default: the CPUs of the GPU's "
     "NUMA node (GPU PEs), not pinned (host-memory PEs)."},
    {"GPUCOMM_PROXY_QUEUES", "32",
     "Descriptor queues of device-side operations per GPU PE when a proxy serves it; a block (or warp) posts to queue "
     "index % queues."},
    {"GPUCOMM_PROXY_QUEUE_PER", "block", "Which group shares a descriptor queue: `block` or `warp`."},
    {"GPUCOMM_PROXY_QUEUE_DEPTH", "1024", "Entries per descriptor queue (a power of two)."},
    {"GPUCOMM_PROXY_RING", "auto",
     "Where descriptor rings live: `host` (pinned host memory), `device` (GPU memory; a CPU proxy then reads it with "
     "copies) or `auto` (host for the CPU proxy, device for the GPU service agent)."},
    {"GPUCOMM_PROXY_DOORBELL", "0",
     "Doorbell batching: producers ring the doorbell every N entries and on quiet; 0: the agent polls the entries' "
     "stamps."},
    {"GPUCOMM_PROXY_IDLE_US", "50",
     "Longest sleep of an idle CPU proxy thread in microseconds (0: spin; lower is faster after idling, higher saves "
     "CPU)."},
    {"GPUCOMM_PROXY_MEMOPS", "1",
     "1: the CPU proxy writes inline puts, set signals and its completion marks with stream memory operations "
     "(cuStreamBatchMemOp) where the driver offers them; 0: with kernels and events."},
    {"GPUCOMM_PROXY_MEMOP_MAX", "64",
     "Small writes of one CPU proxy round issued as stream memory operations at most; a round with more goes as one "
     "scatter kernel."},
    {"GPUCOMM_PROXY_TRACE", "0",
     "1: every descriptor queue records per-entry timestamps (post, agent sees it, issued, completed) that `gpucomm "
     "bench proxy` turns into a latency breakdown; costs a few stores per entry."},
    {"GPUCOMM_AGENT_BLOCKS", "1", "Blocks of the GPU service agent (transport proxy-gpu)."},
    {"GPUCOMM_AGENT_THREADS", "256",
     "Threads per block of the GPU service agent; each warp serves a share of the queues."},
    {"GPUCOMM_COLL_ALGO", "",
     "Collectives: algorithm override for every operation that implements it (`ring`) or per operation "
     "(`allreduce=twoshot,allgather=ring`); unset, the cost model chooses (docs/COLLECTIVES.md)."},
    {"GPUCOMM_COLL_FORCE_PROTOCOL", "0",
     "Collectives, for benchmarks on one GPU: 1 makes a one-member team run the N-PE protocol of the one-shot, "
     "low-latency and barrier algorithms with itself as its peer, instead of a copy or nothing."},
    {"GPUCOMM_COLL_MAX_CTAS", "8",
     "Collectives: channels of each team workspace, and the most CTAs a host-API collective launches (1-64)."},
    {"GPUCOMM_COLL_SCRATCH", "256K",
     "Collectives: scratch bytes per channel and parity, shared by the team's members (each member's slot gets its "
     "share), and the size of the ring region."},
    {"GPUCOMM_COLL_LL", "64K", "Collectives: bytes of LL words per channel and parity (half of them payload)."},
    {"GPUCOMM_COLL_POOL", "0",
     "Collectives: bytes of the symmetric pool the team workspaces come from (0: four workspaces of the world, at most "
     "a quarter of the heap)."},
    {"GPUCOMM_COLL_THREADS", "512",
     "Collectives: threads per CTA of host-API collectives on GPU PEs (a multiple of 32)."},
    {"GPUCOMM_PATTERN_TUNE_FILE", "",
     "File where the pattern layer's autotune keeps its winners across processes (one `KEY STRATEGY` line each; rank "
     "0 appends); unset, winners are cached per process only."},
    {"GPUCOMM_AGENT_IDLE_US", "500",
     "The GPU service agent leaves the GPU after this many microseconds without work and is started again by the next "
     "post (0: it stays until finalize; then cudaFree and cudaDeviceSynchronize wait for finalize)."},
    {"GPUCOMM_MSG_SLOT_BYTES", "256",
     "Messaging: bytes per inbox slot (a power of two, 128 to 4096); a slot holds a 64-byte header and the start of "
     "an eager payload."},
    {"GPUCOMM_MSG_SLOTS", "16",
     "Messaging: inbox slots each sender has at each receiver (a power of two, 2 to 4096): the credits of a sender."},
    {"GPUCOMM_MSG_POOL_SLOTS", "4",
     "Messaging: eager payloads a receiver buffers per sender while they wait for their receive (0 to 64); beyond "
     "them a sender sends header-only (rendezvous)."},
    {"GPUCOMM_MSG_EAGER_MAX", "2048",
     "Messaging: largest message sent eagerly, in bytes (at most what the inbox ring holds); larger ones use the "
     "rendezvous protocol."},
    {"GPUCOMM_MSG_CHUNK", "256K",
     "Messaging: rendezvous chunk in bytes: the size of a staging chunk and what one progress call moves per "
     "transfer."},
    {"GPUCOMM_MSG_STAGING_PAIRS", "4",
     "Messaging: staging pairs (two chunks each) per PE for rendezvous sends from buffers outside the symmetric "
     "heap (1 to 64)."},
    {"GPUCOMM_MSG_REQUESTS", "1024", "Messaging: requests in flight per PE (a multiple of 64, at most 65472)."},
    {"GPUCOMM_MSG_UNEXPECTED", "4096",
     "Messaging: messages per PE that may wait for their receive (a multiple of 64, at most 65472)."},
    {"GPUCOMM_MSG_QUEUE", "1024",
     "Messaging: most unexpected messages, and most posted receives, of one communicator (at most 65536)."},
    {"GPUCOMM_MSG_STEAL_US", "20",
     "Messaging: microseconds a group waits for a parked progress holder (a block busy computing, or whose kernel "
     "exited) before it takes progress over."},
    {"GPUCOMM_MSG_AM_PER_SENDER", "4",
     "Messaging: active messages of one sender a receiver parks for their handlers (1 to 32): the sender's request "
     "credits there, and as many answers reserved."},
    {"GPUCOMM_MSG_AM_MAX", "256",
     "Messaging: largest active-message payload in bytes (at most what the inbox ring holds)."},
};

std::once_flag g_warn_once;

[[noreturn]] void bad_value(const char* name, const std::string& text, const char* what) {
  raise(Errc::invalid_argument, "environment", std::string(name) + "='" + text + "' is not " + what);
}
}  // namespace

std::span<const Variable> known_variables() noexcept {
  return kVariables;
}

std::optional<std::string> get(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return std::nullopt;
  return std::string(v);
}

std::string get_string(const char* name, const std::string& fallback) {
  auto v = get(name);
  return v && !v->empty() ? *v : fallback;
}

int64_t get_int(const char* name, int64_t fallback) {
  auto v = get(name);
  if (!v || v->empty()) return fallback;
  errno = 0;
  char* end = nullptr;
  long long x = std::strtoll(v->c_str(), &end, 0);
  if (errno != 0 || end == v->c_str()) bad_value(name, *v, "an integer");
  int64_t mult = 1;
  if (*end) {
    switch (*end) {
      case 'k':
      case 'K':
        mult = 1LL << 10;
        break;
      case 'm':
      case 'M':
        mult = 1LL << 20;
        break;
      case 'g':
      case 'G':
        mult = 1LL << 30;
        break;
      case 't':
      case 'T':
        mult = 1LL << 40;
        break;
      default:
        bad_value(name, *v, "an integer with an optional K, M, G or T suffix");
    }
    ++end;
    if (*end == 'i' || *end == 'B') ++end;
    if (*end == 'B') ++end;
    if (*end) bad_value(name, *v, "an integer with an optional K, M, G or T suffix");
  }
  return static_cast<int64_t>(x) * mult;
}

double get_double(const char* name, double fallback) {
  auto v = get(name);
  if (!v || v->empty()) return fallback;
  char* end = nullptr;
  double x = std::strtod(v->c_str(), &end);
  if (end == v->c_str() || *end) bad_value(name, *v, "a number");
  return x;
}

bool get_bool(const char* name, bool fallback) {
  auto v = get(name);
  if (!v || v->empty()) return fallback;
  const std::string& s = *v;
  if (s == "1" || s == "true" || s == "yes" || s == "on") return true;
  if (s == "0" || s == "false" || s == "no" || s == "off") return false;
  bad_value(name, s, "a boolean (1/0, true/false, yes/no, on/off)");
}

std::vector<std::string> unknown_variables() {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    if (std::strncmp(*e, "GPUCOMM_", 8) != 0) continue;
    const char* eq = std::strchr(*e, '=');
    std::string name(*e, eq ? static_cast<size_t>(eq - *e) : std::strlen(*e));
    bool known = false;
    for (const auto& v : kVariables) {
      if (name == v.name) {
        known = true;
        break;
      }
    }
    if (!known) out.push_back(name);
  }
  return out;
}

void warn_unknown_once() {
  std::call_once(g_warn_once, [] {
    for (const auto& n : unknown_variables())
      GPUCOMM_LOG(warn, "unknown environment variable " << n << " (see docs/ENV.md for the known ones)");
  });
}

int64_t wait_timeout_ms() {
  const double s = get_double("GPUCOMM_TIMEOUT", 120.0);
  // 0 disables the limit; a positive value below 1 ms would round to 0 and disable it too.
  if (!(s >= 0) || s > 1e9) {
    bad_value("GPUCOMM_TIMEOUT", get_string("GPUCOMM_TIMEOUT", ""), "a number of seconds between 0.001 and 1e9");
  }
  if (s > 0 && s < 0.001) {
    bad_value("GPUCOMM_TIMEOUT", get_string("GPUCOMM_TIMEOUT", ""),
              "a usable limit: below 1 ms (0 disables the limit; the shortest limit is 0.001)");
  }
  return static_cast<int64_t>(s * 1000.0);
}

}  // namespace gpucomm::env
