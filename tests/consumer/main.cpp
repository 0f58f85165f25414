// A host-only program against an installed gpucomm: a ring of put-with-signal on host-memory PEs,
// written as the README shows it (the values of waits and atomics are plain literals).
#include <cstdint>
#include <cstdio>
#include <gpucomm/gpucomm.hpp>

int main() {
  try {
    gpucomm::Runtime rt;
    const int me = rt.rank(), n = rt.size(), right = (me + 1) % n, left = (me + n - 1) % n;
    auto* inbox = rt.alloc<int64_t>(1);
    auto* flag = rt.alloc<uint64_t>(1);
    auto* counter = rt.alloc<uint64_t>(1);
    rt.p(flag, 0, me);
    rt.p(counter, 0, me);
    rt.barrier_all();
    const int64_t mine = 1000 + me;
    rt.put_signal(inbox, &mine, sizeof mine, flag, 1, gpucomm::SignalOp::set, right);
    rt.wait_until(flag, gpucomm::Cmp::ge, 1);
    rt.atomic_add(counter, 1, 0);
    rt.barrier_all();
    const bool ok = *inbox == 1000 + left && (me != 0 || rt.atomic_fetch(counter, 0) == static_cast<uint64_t>(n));
    std::printf("consumer: rank %d of %d, gpucomm %s, got %lld from rank %d: %s\n", me, n, GPUCOMM_VERSION_STRING,
                static_cast<long long>(*inbox), left, ok ? "ok" : "WRONG");
    rt.barrier_all();
    return ok ? 0 : 1;
  } catch (const gpucomm::Error& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
}
