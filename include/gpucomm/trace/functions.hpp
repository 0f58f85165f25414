#pragma once
// The DUMPI function table: every record in a DUMPI body starts with a 16-bit function id whose
// meaning is fixed by the trace format (ids 0..289 are MPI functions in a fixed order, 290 marks
// the end of that list, 291/292 are profiled-function enter/exit, 293 ends the stream).
// gpucomm classifies each id for its metrics; docs/TRACES.md lists the classes.
#include <cstdint>
#include <string_view>

namespace gpucomm::trace {

namespace fid {
// Only the ids the metrics refer to by name; the full table lives in functions.cpp.
inline constexpr uint16_t Send = 0, Recv = 1, Bsend = 3, Ssend = 4, Rsend = 5, Isend = 8, Ibsend = 9, Issend = 10,
                          Irsend = 11, Irecv = 12, Wait = 13, Test = 14, Request_free = 15, Waitany = 16, Testany = 17,
                          Waitall = 18, Testall = 19, Waitsome = 20, Testsome = 21, Iprobe = 22, Probe = 23,
                          Cancel = 24, Send_init = 26, Bsend_init = 27, Ssend_init = 28, Rsend_init = 29,
                          Recv_init = 30, Start = 31, Startall = 32, Sendrecv = 33, Sendrecv_replace = 34,
                          Type_size = 43, Barrier = 52, Bcast = 53, Gather = 54, Gatherv = 55, Scatter = 56,
                          Scatterv = 57, Allgather = 58, Allgatherv = 59, Alltoall = 60, Alltoallv = 61, Reduce = 62,
                          Allreduce = 65, Reduce_scatter = 66, Scan = 67, Comm_size = 81, Comm_rank = 82, Comm_dup = 84,
                          Comm_create = 85, Comm_split = 86, Comm_free = 87, Init = 124, Finalize = 125,
                          Alltoallw = 155, Exscan = 156, Init_thread = 171, Request_get_status = 216;
inline constexpr uint16_t kAllFunctions = 290;  // count of MPI function ids; footer sentinel
inline constexpr uint16_t kFunctionEnter = 291, kFunctionExit = 292, kEndOfStream = 293;
}  // namespace fid

// What a call does, for the time and count metrics.
enum class FuncClass : uint8_t {
  p2p_send,         // a point-to-point send (blocking or not)
  p2p_recv,         // a point-to-point receive
  p2p_sendrecv,     // both halves in one call
  completion,       // wait/test family, request_get_status
  probe,            // probe/iprobe
  persistent_init,  // *_init: creates a persistent request, moves no data
  start,            // start/startall: activates persistent requests
  collective,       // collectives (communicator constructors are not)
  rma,              // one-sided data movement and synchronisation
  io,               // MPI-IO
  admin,            // everything else (init, finalize, communicators, datatypes, queries)
  marker,           // profiled-function enter/exit records (not MPI calls)
};

// "MPI_Send" etc.; "DUMPI_function_<id>" for ids outside the table.
std::string_view function_name(uint16_t id) noexcept;
// Name without the "MPI_" prefix ("Isend"), as the trace READMEs print them.
std::string_view function_short_name(uint16_t id) noexcept;
FuncClass function_class(uint16_t id) noexcept;
bool is_nonblocking(uint16_t id) noexcept;
// Id for a name ("MPI_Isend" or "Isend"); -1 if unknown.
int function_id(std::string_view name) noexcept;
// Communicating calls (s_comm numerator): data movement, completion and synchronisation.
bool is_communicating(FuncClass c) noexcept;

}  // namespace gpucomm::trace
