#include "workspace.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "gpucomm/core/cuda_check.hpp"
#include "gpucomm/core/env.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/core/log.hpp"
#include "gpucomm/topology/topology.hpp"

namespace gpucomm::coll::detail {

namespace {

uint64_t align_down(uint64_t v, uint64_t a) {
  return v / a * a;
}

int64_t env_range(const char* name, int64_t fallback, int64_t lo, int64_t hi) {
  const int64_t v = env::get_int(name, fallback);
  if (v < lo || v > hi) {
    raise(
        Errc::invalid_argument, "environment",
        std::string(name) + "=" + std::to_string(v) + " is outside " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  return v;
}

// Pools made so far by this process; every PE makes them in the same order (collectively).
std::atomic<uint64_t> g_pools{0};

// How this PE sees the node-local members' links (GPU PEs: the topology of the node).
LinkClass local_view(Runtime& rt, const std::vector<int>& devices_on_node) {
  if (rt.pe_kind() != PeKind::gpu) return LinkClass::host;
  std::vector<int> distinct = devices_on_node;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  if (distinct.size() <= 1) return LinkClass::nvlink;  // PEs sharing one GPU: its own memory
  static const topology::Topology topo = topology::detect();
  bool nvlink = true;
  for (int a : distinct) {
    for (int b : distinct) {
      if (a == b) continue;
      const topology::Link* l = topo.link(a, b);
      if (!l || l->type != topology::LinkType::nvlink) nvlink = false;
    }
  }
  if (!nvlink) return LinkClass::pcie;
  return distinct.size() == 2 ? LinkClass::nvlink : LinkClass::nvswitch;
}

std::string members_key(const Team& team) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int m : team.members()) h = mix64(h ^ static_cast<uint64_t>(m));
  char b[40];
  std::snprintf(b, sizeof b, "%d/%016llx", team.id(), static_cast<unsigned long long>(h));
  return b;
}

}  // namespace

Settings read_settings() {
  Settings s;
  s.channels = static_cast<uint32_t>(env_range("GPUCOMM_COLL_MAX_CTAS", 8, 1, kMaxChannels));
  s.scratch = align_down(static_cast<uint64_t>(env_range("GPUCOMM_COLL_SCRATCH", 256 << 10, 1 << 10, 1LL << 32)), 256);
  s.ll = align_down(static_cast<uint64_t>(env_range("GPUCOMM_COLL_LL", 64 << 10, 1 << 10, 1LL << 30)), 256);
  s.pool = static_cast<uint64_t>(env_range("GPUCOMM_COLL_POOL", 0, 0, 1LL << 40));
  s.threads = static_cast<uint32_t>(env_range("GPUCOMM_COLL_THREADS", 512, 32, 1024));
  s.force_protocol = env_range("GPUCOMM_COLL_FORCE_PROTOCOL", 0, 0, 1) != 0;
  if (s.threads % 32 != 0) {
    raise(Errc::invalid_argument, "environment",
          "GPUCOMM_COLL_THREADS=" + std::to_string(s.threads) + " is not a multiple of 32");
  }
  return s;
}

Sizes sizes_for(const Settings& s, int n) {
  Sizes z;
  z.n = n;
  z.slot = std::max<uint64_t>(256, align_down(s.scratch / static_cast<uint64_t>(n), 256));
  z.ring = s.scratch;
  z.ll = std::max<uint64_t>(256, align_down(s.ll / static_cast<uint64_t>(n), 256));
  return z;
}

uint64_t workspace_bytes(const Settings& s, int n) {
  const Sizes z = sizes_for(s, n);
  const ChannelLayout l = channel_layout(n, z.slot, z.ring, z.ll);
  return align_up(workspace_header_bytes(n) + s.channels * l.stride, 4096);
}

Pool::Pool(Runtime& rt, const Settings& s) : rt_(rt) {
  instance = g_pools.fetch_add(1);
  const uint64_t world = workspace_bytes(s, rt.size());
  bytes_ = s.pool;
  if (bytes_ == 0) bytes_ = std::max<uint64_t>(world, std::min<uint64_t>(4 * world, rt.heap().size() / 4));
  bytes_ = align_up(bytes_, 4096);
  try {
    base_ = static_cast<char*>(rt.calloc(bytes_, 1));
  } catch (const Error& e) {
    raise(e.code(), "Collectives",
          "the pool of team workspaces (" + std::to_string(bytes_) + " bytes; the world's workspace needs " +
              std::to_string(world) +
              ") does not fit the symmetric heap: raise GPUCOMM_HEAP_SIZE or lower "
              "GPUCOMM_COLL_POOL, GPUCOMM_COLL_SCRATCH, GPUCOMM_COLL_MAX_CTAS (" +
              e.what() + ")");
  }
  GPUCOMM_LOG(debug, "collectives: pool of " << bytes_ << " bytes; a workspace of the world takes " << world);
}

Pool::~Pool() {
  // Not collective here: Collectives' destructor releases the pool collectively.
}

void Pool::release() {
  if (!base_) return;
  char* p = base_;
  base_ = nullptr;
  rt_.free(p);
}

std::unique_ptr<TeamState> make_team_state(Runtime& rt, Pool& pool, const Settings& s, const Team& team,
                                           CollDiag* diag) {
  const int n = team.size(), me = team.rank();
  auto ts = std::make_unique<TeamState>();
  ts->team = team;
  ts->sizes = sizes_for(s, n);
  const uint64_t bytes = workspace_bytes(s, n);
  bool direct = true;
  for (int m : team.members()) direct = direct && rt.ptr(pool.base(), m) != nullptr;
  // Gather 1: cursors, nodes, devices, mappings.
  const std::string key = "coll/" + std::to_string(pool.instance) + "/" + members_key(team);
  std::ostringstream mine;
  mine << pool.cursor << ' ' << rt.node_id() << ' ' << rt.device_id() << ' ' << (direct ? 1 : 0);
  const auto all = rt.bootstrap().gather(key + "/ws", n, me, mine.str());
  uint64_t offset = 0;
  std::vector<int> node(static_cast<size_t>(n)), dev(static_cast<size_t>(n));
  bool all_direct = true;
  for (int i = 0; i < n; ++i) {
    std::istringstream in(all[static_cast<size_t>(i)]);
    uint64_t cur = 0;
    int d = 0;
    in >> cur >> node[static_cast<size_t>(i)] >> dev[static_cast<size_t>(i)] >> d;
    offset = std::max(offset, cur);
    all_direct = all_direct && d == 1;
  }
  if (offset + bytes > pool.bytes()) {
    raise(Errc::out_of_memory, "Collectives::prepare",
          "the pool of team workspaces (GPUCOMM_COLL_POOL, " + std::to_string(pool.bytes()) +
              " bytes) has no room for "
              "the workspace of team " +
              std::to_string(team.id()) + " (" + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
              ")");
  }
  pool.cursor = offset + bytes;
  // Nodes in the order of their first member; members of a node in team order.
  std::vector<int> node_order;
  std::vector<std::vector<int>> rows;
  for (int i = 0; i < n; ++i) {
    auto it = std::find(node_order.begin(), node_order.end(), node[static_cast<size_t>(i)]);
    if (it == node_order.end()) {
      node_order.push_back(node[static_cast<size_t>(i)]);
      rows.emplace_back();
      it = node_order.end() - 1;
    }
    rows[static_cast<size_t>(it - node_order.begin())].push_back(i);
  }
  const int nodes = static_cast<int>(rows.size());
  int per_node = static_cast<int>(rows[0].size());
  for (const auto& r : rows)
    if (static_cast<int>(r.size()) != per_node) per_node = 0;
  int node_index = 0, local_index = 0;
  std::vector<int32_t> table;
  for (int a = 0; a < nodes; ++a) {
    for (size_t l = 0; l < rows[static_cast<size_t>(a)].size(); ++l) {
      table.push_back(rows[static_cast<size_t>(a)][l]);
      if (rows[static_cast<size_t>(a)][l] == me) node_index = a, local_index = static_cast<int>(l);
    }
  }
  // Gather 2: the slowest link class any member sees on its node.
  std::vector<int> devices_on_node;
  for (int i : rows[static_cast<size_t>(node_index)]) devices_on_node.push_back(dev[static_cast<size_t>(i)]);
  const LinkClass view = local_view(rt, devices_on_node);
  const auto views = rt.bootstrap().gather(key + "/links", n, me, std::to_string(static_cast<int>(view)));
  int intra = 0;
  for (const auto& v : views) intra = std::max(intra, std::stoi(v));

  char* ws = pool.base() + offset;
  const size_t table_bytes = sizeof(int32_t) * table.size();
  if (rt.pe_kind() == PeKind::gpu) {
    check_cuda(cudaMemcpy(ws + 128, table.data(), table_bytes, cudaMemcpyHostToDevice), "cudaMemcpy",
               "collective node table");
  } else {
    std::memcpy(ws + 128, table.data(), table_bytes);
  }

  TopoSummary& t = ts->topo;
  t.n = n;
  t.nodes = nodes;
  t.per_node = per_node;
  t.intra = static_cast<LinkClass>(intra);
  t.all_direct = all_direct;
  t.gpu = rt.pe_kind() == PeKind::gpu;
  ts->sizes.per_node = static_cast<uint32_t>(per_node);

  CollHandle& h = ts->h;
  h.magic = kCollMagic;
  h.version = kCollVersion;
  h.bytes = sizeof(CollHandle);
  h.team = rt.device_team(team);
  h.ws = ws;
  h.channels = s.channels;
  h.flags = (all_direct ? kCollAllDirect : 0u) | (s.force_protocol && n == 1 ? kCollForceProtocol : 0u);
  h.slot_bytes = ts->sizes.slot;
  h.ring_bytes = ts->sizes.ring;
  h.ll_bytes = ts->sizes.ll;
  h.channel_offset = workspace_header_bytes(n);
  h.channel_stride = channel_layout(n, ts->sizes.slot, ts->sizes.ring, ts->sizes.ll).stride;
  h.nodes = static_cast<uint32_t>(nodes);
  h.per_node = static_cast<uint32_t>(per_node);
  h.node_table = per_node ? reinterpret_cast<const int32_t*>(ws + 128) : nullptr;
  h.node_index = node_index;
  h.local_index = local_index;
  h.diag = diag;
  fill_auto_rules(h, t, ts->sizes, s.channels);
  GPUCOMM_LOG(debug, "collectives: team " << team.id() << " (" << n << " PEs, " << nodes << " nodes, "
                                          << link_class_name(t.intra) << ") workspace of " << bytes
                                          << " bytes at pool offset " << offset);
  return ts;
}

}  // namespace gpucomm::coll::detail

namespace gpucomm::coll {

void validate_handle(const CollHandle& h, const char* what) {
  auto bad = [&](const char* field, uint64_t want, uint64_t seen) {
    raise_arg(what, field,
              "is " + std::to_string(seen) + ", this library's is " + std::to_string(want) +
                  " (a CollHandle from other headers or not from Collectives::handle)");
  };
  if (h.magic != kCollMagic) bad("magic", kCollMagic, h.magic);
  if (h.version != kCollVersion) bad("version", kCollVersion, h.version);
  if (h.bytes != sizeof(CollHandle)) bad("bytes", sizeof(CollHandle), h.bytes);
  validate_handle(h.team, what);
}

}  // namespace gpucomm::coll
