// gpucomm.Team and the team calls of gpucomm.Runtime, as in the C++ API (gpucomm/runtime/team.hpp):
// the world and node teams, split (collective over the parent) and barrier (collective over the
// team). A Team is a value: copies share the team, whose synchronization slot is freed when the
// last copy goes away.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>

#include "blocking.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/gpucomm.hpp"
#include "py_runtime.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using gpucomm::Team;

namespace {

void require_valid(const Team& t, const char* what) {
  if (!t.valid()) {
    gpucomm::raise_arg(what, "team",
                       "this Team is not valid (this PE is not a member: split gave it a negative color)");
  }
}

std::string describe(const Team& t) {
  if (!t.valid()) return "Team(invalid: not a member)";
  std::string members;
  const auto& m = t.members();
  for (size_t i = 0; i < m.size() && i < 16; ++i) members += (i ? ", " : "") + std::to_string(m[i]);
  if (m.size() > 16) members += ", ...";
  return "Team(rank " + std::to_string(t.rank()) + " of " + std::to_string(t.size()) + ", members [" + members + "])";
}

}  // namespace

void bind_teams(nb::module_& m) {
  nb::class_<Team>(m, "Team",
                   "An ordered subset of the world's PEs (Runtime.world, Runtime.node, Runtime.split). Falsy when "
                   "this PE is not a member.")
      .def_prop_ro("valid", &Team::valid, "Whether this PE is a member.")
      .def("__bool__", &Team::valid)
      .def_prop_ro(
          "size",
          [](const Team& t) {
            require_valid(t, "Team.size");
            return t.size();
          },
          "Number of PEs.")
      .def_prop_ro(
          "rank",
          [](const Team& t) {
            require_valid(t, "Team.rank");
            return t.rank();
          },
          "This PE's index in the team.")
      .def_prop_ro(
          "members",
          [](const Team& t) {
            require_valid(t, "Team.members");
            return t.members();
          },
          "World ranks of the members, in team order.")
      .def(
          "world_rank",
          [](const Team& t, int i) {
            require_valid(t, "Team.world_rank");
            return t.world_rank(i);
          },
          "team_rank"_a, "The world rank of the team's member team_rank.")
      .def(
          "team_rank",
          [](const Team& t, int r) {
            require_valid(t, "Team.team_rank");
            return t.team_rank(r);
          },
          "world_rank"_a, "The team rank of world rank world_rank, -1 when it is not a member.")
      .def("__len__",
           [](const Team& t) {
             require_valid(t, "len(Team)");
             return t.size();
           })
      .def("__repr__", &describe);

  gpucomm::py::Methods(m.attr("Runtime"))
      .prop(
          "world", [](nb::handle self) { return py_runtime(self).world(); }, "The team of every PE.")
      .prop(
          "node", [](nb::handle self) { return py_runtime(self).node(); }, "The team of this node's PEs.")
      .def(
          "split",
          [](nb::handle self, const Team& parent, int color, int key) {
            gpucomm::Runtime& rt = py_runtime(self);
            require_valid(parent, "split: parent");
            gpucomm::python::Unlocked nogil;
            return rt.split(parent, color, key);
          },
          "parent"_a, "color"_a, "key"_a = 0,
          "Collective over parent: PEs with the same color form a team, ordered by key, then rank. A negative "
          "color gives an invalid (falsy) Team: this PE joins none.")
      .def(
          "barrier",
          [](nb::handle self, const Team& team) {
            gpucomm::Runtime& rt = py_runtime(self);
            require_valid(team, "barrier: team");
            gpucomm::python::Unlocked nogil;
            rt.barrier(team);
          },
          "team"_a, "Collective over team: quiet, then no member leaves before all arrived.");
}
