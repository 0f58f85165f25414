#include "gpucomm/runtime/runtime.hpp"

#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

#include "allocator_state.hpp"
#include "bootstrap/rendezvous.hpp"
#include "device_select.hpp"
#include "gpu_state.hpp"
#include "gpucomm/core/env.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/core/log.hpp"
#include "heap/device_heap.hpp"
#include "heap/host_heap.hpp"
#include "proxy_state.hpp"

namespace gpucomm {

namespace {

std::string host_name() {
  if (auto h = env::get("GPUCOMM_HOSTNAME"); h && !h->empty()) return *h;
  char buf[256] = {0};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

std::string random_hex(size_t bytes) {
  std::string raw(bytes, '\0');
  if (getrandom(raw.data(), bytes, 0) != static_cast<ssize_t>(bytes)) raise_errno("getrandom", errno);
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

}  // namespace

Runtime::Runtime() : Runtime(RuntimeOptions{}) {}

Runtime::Runtime(const RuntimeOptions& opts) : uncaught_at_start_(std::uncaught_exceptions()) {
  try {
    init(opts);
  } catch (const std::exception& e) {
    // The others wait for this PE in the start-up's collectives: tell them at once.
    abort(std::string("start-up failed: ") + e.what());
    throw;
  }
}

Runtime::~Runtime() {
  try {
    if (std::uncaught_exceptions() > uncaught_at_start_) {
      // Leaving the runtime's scope by an exception: the others must not wait in finalize.
      std::string local = bootstrap_ ? bootstrap_->local_failure() : std::string();
      if (local.empty()) local = own_device_failure();
      abort(local.empty() ? "an exception is unwinding through gpucomm::Runtime (the program's own report follows)"
                          : local);
    } else {
      finalize();
    }
  } catch (const std::exception& e) {
    GPUCOMM_LOG(error, "finalize: " << e.what());
  }
}

void Runtime::abort(const std::string& reason) {
  if (finalized_) return;
  aborted_ = reason.empty() ? std::string("aborted") : reason;
  if (bootstrap_) {
    // A peer's failure this PE saw first (a transport error naming the dead PE) reaches the job's
    // record through the store or the launcher within milliseconds: wait for it (up to 1 s), so
    // that the record names that PE and not this one.
    Errc last{};
    if (!bootstrap_->failed() && last_error_on_this_thread(&last) && last == Errc::peer_failure) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      while (!bootstrap_->failed() && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    bootstrap_->abort(aborted_);  // does nothing once the job failed
  }
  release();
}

void Runtime::init(const RuntimeOptions& opts) {
  env::warn_unknown_once();
  timeout_ms_ = env::wait_timeout_ms();
  // With a proxy in the path, kernels wait for work that other streams carry out (copies and
  // kernels of the CPU proxy, restarts of the GPU agent). CUDA's lazy loading loads a kernel at
  // its first launch, and that load waits for the device's running kernels: a kernel launched
  // behind one that waits for the proxy would stall the proxy and itself. Eager loading avoids
  // it; it only applies if no CUDA context exists yet, and the user's setting wins.
  const transport::Kind forced = requested_transport(opts);
  if (forced != transport::Kind::automatic && forced != transport::Kind::direct)
    setenv("CUDA_MODULE_LOADING", "EAGER", 0);
  bootstrap::LaunchInfo info;
  if (!opts.unique_id.empty()) {
    GPUCOMM_CHECK_ARG(opts.size >= 1, "Runtime", "RuntimeOptions::size", "must be set with unique_id");
    GPUCOMM_CHECK_ARG(opts.rank >= 0 && opts.rank < opts.size, "Runtime", "RuntimeOptions::rank",
                      std::to_string(opts.rank) + " is outside 0.." + std::to_string(opts.size - 1));
    info.launcher = "explicit";
    info.rank = opts.rank;
    info.size = opts.size;
    info.local_rank = -1;
    info.local_size = -1;
    bootstrap_ = std::make_unique<bootstrap::Bootstrap>(
        bootstrap::UniqueId::parse(opts.unique_id, "RuntimeOptions::unique_id"), opts.rank, opts.size);
  } else {
    info = bootstrap::detect_launch();
    bootstrap_ = bootstrap::Bootstrap::from_environment(info);
  }
  launcher_ = info.launcher;
  rank_ = bootstrap_->rank();
  size_ = bootstrap_->size();
  set_process_rank(rank_, size_);

  // Nodes from host names; local rank and size follow from them.
  auto hosts = bootstrap_->allgather(host_name());
  std::map<std::string, int> node_ids;
  node_of_.resize(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    auto it = node_ids.find(hosts[static_cast<size_t>(r)]);
    if (it == node_ids.end())
      it = node_ids.emplace(hosts[static_cast<size_t>(r)], static_cast<int>(node_ids.size())).first;
    node_of_[static_cast<size_t>(r)] = it->second;
  }
  num_nodes_ = static_cast<int>(node_ids.size());
  std::vector<int> node_members;
  for (int r = 0; r < size_; ++r)
    if (node_of_[static_cast<size_t>(r)] == node_id()) node_members.push_back(r);
  local_size_ = static_cast<int>(node_members.size());
  local_rank_ = static_cast<int>(std::find(node_members.begin(), node_members.end(), rank_) - node_members.begin());

  // A job-wide tag names this job's node-local sockets.
  if (rank_ == 0) bootstrap_->set("runtime/job_tag", random_hex(12));
  job_tag_ = bootstrap_->get("runtime/job_tag");

  std::string mode = opts.device.empty() ? env::get_string("GPUCOMM_DEVICE", "auto") : opts.device;
  device_id_ = detail::select_device(mode, local_rank_);
  kind_ = device_id_ >= 0 ? PeKind::gpu : PeKind::host;
  if (kind_ == PeKind::gpu) detail::activate_device(device_id_);

  const int64_t heap_env = opts.heap_bytes ? 0 : env::get_int("GPUCOMM_HEAP_SIZE", 128LL << 20);
  GPUCOMM_CHECK_ARG(opts.heap_bytes || heap_env > 0, "Runtime", "GPUCOMM_HEAP_SIZE",
                    std::to_string(heap_env) + " is not a positive number of bytes");
  const size_t heap_bytes = opts.heap_bytes ? opts.heap_bytes : static_cast<size_t>(heap_env);
  agree_on_heap(heap_bytes);
  if (kind_ == PeKind::host) {
    heap_ = std::make_unique<heap::HostHeap>(*bootstrap_, node_of_, heap_bytes, job_tag_);
  } else {
    heap_ = std::make_unique<heap::DeviceHeap>(*bootstrap_, node_of_, device_id_, kDeviceControlBytes, heap_bytes,
                                               job_tag_, env::get_string("GPUCOMM_HEAP_MAPPING", "auto"));
    gpu_init();
  }
  alloc_ = std::make_unique<AllocatorState>(heap_->size());
  proxy_init(opts);  // collective: routes, queues, agents, UCX

  team_slots_ = std::make_shared<std::atomic<uint64_t>>(uint64_t(3));  // world and node
  world_ = make_team(0, [&] {
    std::vector<int> all(static_cast<size_t>(size_));
    for (int r = 0; r < size_; ++r) all[static_cast<size_t>(r)] = r;
    return all;
  }());
  node_ = make_team(1, node_members);
  bootstrap_->barrier();
  GPUCOMM_LOG(info, "runtime ready: " << describe());
}

// Every PE must agree on the heap's kind (a job mixes GPU and host-memory PEs only by mistake)
// and size (a put within this PE's heap would land outside a smaller one): checked in one
// all-gather, naming the first PE that differs.
void Runtime::agree_on_heap(size_t heap_bytes) {
  const std::string kind = kind_ == PeKind::gpu ? "gpu" : "host";
  const auto d = bootstrap_->agree(kind + " " + std::to_string(heap_bytes));
  if (!d) return;
  const size_t space = d.value.find(' ');
  const std::string their_kind = d.value.substr(0, space);
  if (their_kind != kind) {
    raise(Errc::unsupported, "Runtime",
          "rank " + std::to_string(d.rank) + " is a " + their_kind + " PE and this one a " + kind +
              " PE; set GPUCOMM_DEVICE the same way on every PE");
  }
  raise_arg("Runtime", "GPUCOMM_HEAP_SIZE",
            "rank " + std::to_string(d.rank) + " asked for a symmetric heap of " + d.value.substr(space + 1) +
                " bytes, this PE for " + std::to_string(heap_bytes) +
                " (GPUCOMM_HEAP_SIZE or RuntimeOptions::heap_bytes must be the same on every PE)");
}

Team Runtime::make_team(int slot, std::vector<int> members) {
  auto s = std::make_shared<Team::State>();
  s->id = slot;
  s->members = std::move(members);
  s->my_index = static_cast<int>(std::find(s->members.begin(), s->members.end(), rank_) - s->members.begin());
  s->slots = team_slots_;
  if (heap_ && heap_->kind() == heap::MemoryKind::host) {
    auto* ctl = static_cast<heap::HostHeap*>(heap_.get())->control(rank_);
    for (auto& f : ctl->barrier_flags[slot]) std::atomic_ref<uint64_t>(f).store(0, std::memory_order_relaxed);
  }
  reset_team_slot(*s);
  return Team(s);
}

void Runtime::finalize() {
  if (finalized_) return;
  if (!bootstrap_) {
    finalized_ = true;
    return;
  }
  // A PE out of step (one of its own waits failed) aborts: nobody would join its barrier. So does a
  // PE whose kernel failed by itself (its GPU is unusable; peers may wait for it on the device).
  if (!bootstrap_->failed() && !bootstrap_->local_failure().empty()) return abort(bootstrap_->local_failure());
  if (!bootstrap_->failed()) {
    if (std::string own = own_device_failure(); !own.empty()) return abort(own);
  }
  if (!bootstrap_->failed()) {
    try {
      quiet();
    } catch (const std::exception& e) {  // a GPU that failed without a record still lets the others finalize
      GPUCOMM_LOG(error, "finalize: " << e.what());
    }
    try {
      bootstrap_->barrier();
    } catch (const std::exception& e) {
      GPUCOMM_LOG(error, "finalize: " << e.what());
      if (!bootstrap_->failed()) {
        aborted_ = std::string("finalize failed: ") + e.what();
        bootstrap_->abort(aborted_);
      }
    }
  }
  release();
}

void Runtime::release() {
  finalized_ = true;
  world_ = Team();
  node_ = Team();
  try {
    proxy_finalize();  // after the barrier: nobody posts any more
  } catch (const std::exception& e) {
    GPUCOMM_LOG(error, "finalize: stopping the proxy: " << e.what());
  }
  if (bootstrap_) bootstrap_->set_job_state_word(nullptr);  // the word is freed with gpu_
  gpu_.reset();
  heap_.reset();
  alloc_.reset();
  if (bootstrap_) {
    bootstrap_->finalize();  // waits for nobody once the job failed
    bootstrap_.reset();
  }
  bootstrap::mpi_finalize_if_ours();
  set_process_rank(-1, 0);
}

void Runtime::check_open(const char* op) const {
  if (!aborted_.empty()) raise(Errc::aborted, op, "this PE's runtime was aborted: " + aborted_);
  if (finalized_ || !heap_) raise(Errc::invalid_argument, op, "the runtime is finalized");
  if (bootstrap_->failed()) raise(Errc::peer_failure, op, "the job failed: " + bootstrap_->failure());
}

int Runtime::node_of(int pe) const {
  check_pe(pe, "node_of");
  return node_of_[static_cast<size_t>(pe)];
}

std::string Runtime::describe() const {
  std::string s = "rank " + std::to_string(rank_) + " of " + std::to_string(size_) + " (local " +
                  std::to_string(local_rank_) + " of " + std::to_string(local_size_) + ", node " +
                  std::to_string(node_id()) + " of " + std::to_string(num_nodes_) + "), ";
  s += kind_ == PeKind::gpu ? "GPU PE on device " + std::to_string(device_id_) : std::string("host-memory PE");
  if (auto* dh = dynamic_cast<const heap::DeviceHeap*>(heap_.get())) s += " (heap mapped with " + dh->mapping() + ")";
  s += ", launched by " + launcher_ + ", bootstrap: " + bootstrap_->describe();
  return s;
}

heap::SymmetricHeap& Runtime::heap() {
  if (!heap_) {
    raise(aborted_.empty() ? Errc::invalid_argument : Errc::aborted, "Runtime::heap",
          aborted_.empty() ? "the runtime is finalized" : "this PE's runtime was aborted: " + aborted_);
  }
  return *heap_;
}

bool Runtime::failed() const {
  return bootstrap_ && bootstrap_->failed();
}
std::string Runtime::failure() const {
  return bootstrap_ ? bootstrap_->failure() : "";
}

void Runtime::check_pe(int pe, const char* op) const {
  if (pe < 0 || pe >= size_) raise_arg(op, "pe", std::to_string(pe) + " is outside 0.." + std::to_string(size_ - 1));
}

Team Runtime::split(const Team& parent, int color, int key) {
  GPUCOMM_CHECK_ARG(parent.valid(), "Runtime::split", "parent", "is not a team this PE belongs to");
  Team::State& ps = *parent.state_;
  std::string group = "team" + std::to_string(ps.id) + "/" + std::to_string(ps.collective_seq++) + "/split";
  struct Entry {
    int32_t color, key, world_rank, pad;
    uint64_t slots;
  };
  Entry mine{color, key, rank_, 0, team_slots_->load()};
  auto parts = bootstrap_->gather(group, static_cast<int>(ps.members.size()), ps.my_index,
                                  std::string(reinterpret_cast<const char*>(&mine), sizeof mine));
  std::vector<Entry> all(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].size() != sizeof(Entry)) raise(Errc::protocol, "Runtime::split", "malformed split record");
    std::memcpy(&all[i], parts[i].data(), sizeof(Entry));
  }
  if (color < 0) return Team();
  std::vector<Entry> same;
  uint64_t busy = 0;
  for (const auto& e : all) {
    if (e.color == color) {
      same.push_back(e);
      busy |= e.slots;
    }
  }
  std::sort(same.begin(), same.end(), [](const Entry& a, const Entry& b) {
    return a.key != b.key ? a.key < b.key : a.world_rank < b.world_rank;
  });
  int slot = -1;
  static_assert(heap::HostControlBlock::kMaxTeams == kMaxTeams, "host and device team slots agree");
  for (int s = 2; s < kMaxTeams; ++s) {
    if (!(busy & (uint64_t(1) << s))) {
      slot = s;
      break;
    }
  }
  if (slot < 0) {
    raise(Errc::out_of_memory, "Runtime::split",
          "all " + std::to_string(kMaxTeams - 2) + " team slots are held by live teams; drop unused teams first");
  }
  team_slots_->fetch_or(uint64_t(1) << slot);
  std::vector<int> members;
  members.reserve(same.size());
  for (const auto& e : same) members.push_back(e.world_rank);
  Team t = make_team(slot, members);
  // Everyone's flags for the slot are reset before anyone uses the new team.
  bootstrap_->gather("team-init/" + group + "/" + std::to_string(color), t.size(), t.rank(), "");
  return t;
}

}  // namespace gpucomm
