#pragma once
// Synthetic two-rank traces with hand-computed answers, shared by the trace tests.
#include "dumpi_writer.hpp"

namespace gpucomm::trace::testing {

inline constexpr int64_t kBase = 1000LL * 1000000000LL;  // 1000 s: the writers' wall offset
inline constexpr int64_t us(int64_t v) {
  return kBase + v * 1000;
}
inline constexpr int32_t kInt = 9, kDouble = 14;  // datatype handles (sizes 4 and 8)

// Scenario A. Rank 1 posts a receive for tag 6 first; rank 0 then sends tags 5 and 6; rank 1
// finally posts an MPI_ANY_SOURCE receive for tag 5 and learns the source from Waitall.
//   replay at rank 1: send(5) searches PRQ [6] -> unexpected (length 1, depth 1)
//                     send(6) searches PRQ [6] -> expected (length 1, depth 1)
//                     post(6) searched empty UMQ (0, 0); post(ANY,5) searches UMQ [5] (1, 1)
// Rank 0 also sends once to MPI_PROC_NULL, which is not a message.
inline void write_scenario_a(const std::filesystem::path& dir, const std::string& prefix = "a") {
  write_meta(dir, prefix, 2);
  {
    DumpiWriter w(rank_path(dir, prefix, 0));
    w.init(us(0), us(10));
    w.comm_size(us(20), us(21), 2);
    w.isend(us(100), us(101), 4, kInt, 1, 5, 10);
    w.isend(us(102), us(103), 2, kDouble, 1, 6, 10);  // shares request id 10, as Open MPI does
    w.send_like(fid::Send, us(104), us(105), 8, kInt, kProcNull, 7);
    w.waitall(us(106), us(110), {10, 10}, {});
    w.allreduce(us(120), us(130), 3, kDouble);
    w.finalize(us(200), us(210));
    w.close();
  }
  {
    DumpiWriter w(rank_path(dir, prefix, 1));
    w.init(us(0), us(10));
    w.irecv(us(50), us(51), 2, kDouble, 0, 6, 20);
    w.irecv(us(150), us(151), 4, kInt, kAnySource, 5, 21);
    w.waitall(us(152), us(160), {20, 21}, {{16, 0, 6, 0, 0}, {16, 0, 5, 0, 0}});
    w.allreduce(us(165), us(170), 3, kDouble);
    w.finalize(us(200), us(210));
    w.close();
  }
}

// Scenario B. Rank 0 sends tags 1, 2, 3 before rank 1 posts receives for 3, 2, 1 (worst case:
// each receive finds its message at the tail of the UMQ), then tags 4, 5 arrive and are taken by
// two MPI_ANY_TAG receives in arrival order.
inline void write_scenario_b(const std::filesystem::path& dir, const std::string& prefix = "b") {
  write_meta(dir, prefix, 2);
  {
    DumpiWriter w(rank_path(dir, prefix, 0));
    w.init(us(0), us(1));
    for (int t = 1; t <= 3; ++t) w.send_like(fid::Send, us(10 + t), us(10 + t) + 100, 1, kInt, 1, t);
    for (int t = 4; t <= 5; ++t) w.send_like(fid::Send, us(40 + t), us(40 + t) + 100, 1, kInt, 1, t);
    w.finalize(us(100), us(101));
    w.close();
  }
  {
    DumpiWriter w(rank_path(dir, prefix, 1));
    w.init(us(0), us(1));
    for (int t = 3; t >= 1; --t) w.recv(us(30 - t), us(30 - t) + 100, 1, kInt, 0, t, {{4, 0, t, 0, 0}});
    w.recv(us(50), us(50) + 100, 1, kInt, 0, kAnyTag, {{4, 0, 4, 0, 0}});
    w.recv(us(51), us(51) + 100, 1, kInt, 0, kAnyTag, {{4, 0, 5, 0, 0}});
    w.finalize(us(100), us(101));
    w.close();
  }
}

}  // namespace gpucomm::trace::testing
