#pragma once
// The pieces strategies are made of. A strategy produces steps with phases (strategies.cpp:
// one step per transfer; forward.cpp: the tree and ring, which forward copies from endpoints
// that already received them); finish() does the rest the same way for all: phases late enough
// for every dependency, no empty phases, an engine per step, a link per owner and endpoint pair,
// the signals between PEs, the estimate.
#include <string>
#include <vector>

#include "gpucomm/patterns/schedule.hpp"

namespace gpucomm::patterns::detail {

// One step per transfer (step i serves transfer i), phase 0, rows merged where back to back.
std::vector<Step> direct_steps(const GlobalPattern& g, const Fabric& f);

void phases_round(std::vector<Step>& steps);
void phases_left_right(std::vector<Step>& steps, const GlobalPattern& g, const Fabric& f);
void phases_pairwise(std::vector<Step>& steps, const Fabric& f);

// Replication structure: transfers grouped by their source region.
struct Replication {
  struct Group {
    GlobalRegion src;
    std::vector<uint32_t> transfers;
  };
  std::vector<Group> groups;
};
// Empty groups (and a reason in `why`) when the pattern is not one source copied to several
// places, with no dependencies.
Replication replication_of(const GlobalPattern& g, std::string* why);
// Whether a forwarding strategy can run: every hop's copy has an owner that reaches both ends.
bool broadcast_shaped(const GlobalPattern& g, const Fabric& f, std::string* why);
bool all_gather_shaped(const GlobalPattern& g, const Fabric& f, std::string* why);

std::vector<Step> tree_steps(const GlobalPattern& g, const Fabric& f);
std::vector<Step> ring_steps(const GlobalPattern& g, const Fabric& f, uint32_t chunks);

// The PE that executes a copy from `src` to `dst` (a put where the destination is symmetric, a
// get where it is a PE's own host or device memory), or -1 when no PE can.
int copy_owner(const GlobalRegion& dst, const GlobalRegion& src);

Schedule finish(std::vector<Step> steps, Strategy s, bool strict_phases, uint32_t chunks, const GlobalPattern& g,
                const Fabric& f, const ScheduleOptions& o);

}  // namespace gpucomm::patterns::detail
