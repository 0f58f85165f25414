#pragma once
// The CPU model of a pattern's data movement, with plain loops: the reference that plans are
// tested against. apply() moves the bytes of the declared pattern (not of a schedule) in an
// order that respects its dependencies; write_coverage() checks a schedule structurally: every
// destination byte of the pattern is written by exactly one step, and no other byte is written.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "gpucomm/patterns/schedule.hpp"

namespace gpucomm::patterns::model {

// Where the model finds a region's buffer: the address of its first byte in this process (a
// copy of the memory, or the memory itself on host-memory PEs).
using Resolve = std::function<char*(const GlobalRegion&)>;

// Copies every transfer's source box into its destination box, one transfer at a time, each
// after the transfers it depends on (declaration order otherwise).
void apply(const GlobalPattern& g, const Resolve& at);
// The same for one transfer.
void copy_box(char* dst, const Box& dbox, const char* src, const Box& sbox);

// Problems with a schedule's writes: a destination byte of the pattern that no step or several
// steps write, or a byte outside the pattern's destinations that a step writes. Empty when every
// byte lands exactly once.
std::vector<std::string> write_coverage(const GlobalPattern& g, const Schedule& s);

}  // namespace gpucomm::patterns::model
