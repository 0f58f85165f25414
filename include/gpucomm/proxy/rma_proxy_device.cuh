#pragma once
// The one-sided operations as descriptors, for PEs a proxy serves (rma_device.cuh, atomic_device.cuh
// and barrier_device.cuh call these when via_proxy() says so). One descriptor per operation,
// whatever its size: the agent moves the bytes (copy engine, SM copies or UCX).
//   blocking forms   post, then wait for the ticket's completion (src reusable, dst filled)
//   non-blocking     post only; quiet() completes them
//   g, fetching atomics   the result lands in the queue's result slot of the ticket
#include <cuda/std/type_traits>

#include "gpucomm/proxy/queue_device.cuh"

namespace gpucomm::device::detail {

template <class Coop>
__device__ inline void proxy_transfer(Coop c, const DeviceHandle& h, proxy::Opcode opcode, int64_t remote, const void* local,
                                      size_t bytes, int pe, bool blocking, DeviceOp op) {
  publish_group(c);
  if (leader(c)) {
    proxy::Descriptor d{};
    d.opcode = opcode;
    d.pe = pe;
    d.remote = remote;
    d.local = reinterpret_cast<uint64_t>(local);
    d.bytes = bytes;
    const proxy::QueueView& q = queue_of(h);
    const uint64_t t = post(h, q, d);
    if (blocking) wait_ticket(h, q, t, op, pe);
  }
  if (blocking) coop::sync(c);
}

template <class Coop>
__device__ inline void proxy_put(Coop c, const DeviceHandle& h, void* dst, const void* src, size_t bytes, int pe, bool blocking) {
  check_sym(h, dst, bytes, 1, DeviceOp::put, pe);
  proxy_transfer(c, h, proxy::Opcode::put, heap_offset(h, dst), src, bytes, pe, blocking, DeviceOp::put);
}

template <class Coop>
__device__ inline void proxy_get(Coop c, const DeviceHandle& h, void* dst, const void* src, size_t bytes, int pe, bool blocking) {
  check_sym(h, src, bytes, 1, DeviceOp::get, pe);
  proxy_transfer(c, h, proxy::Opcode::get, heap_offset(h, src), dst, bytes, pe, blocking, DeviceOp::get);
}

template <class T>
__device__ inline void proxy_p(const DeviceHandle& h, T* dst, T value, int pe) {
  static_assert(sizeof(T) <= 8, "p() through a proxy carries at most 8 bytes inline");
  check_sym(h, dst, sizeof(T), alignof(T), DeviceOp::p, pe);
  proxy::Descriptor d{};
  d.opcode = proxy::Opcode::put_inline;
  d.pe = pe;
  d.remote = heap_offset(h, dst);
  d.bytes = sizeof(T);
  memcpy(&d.value, &value, sizeof(T));
  post(h, queue_of(h), d);
}

template <class T>
__device__ inline T proxy_g(const DeviceHandle& h, const T* src, int pe) {
  static_assert(sizeof(T) <= 8, "g() through a proxy returns at most 8 bytes");
  check_sym(h, src, sizeof(T), alignof(T), DeviceOp::g, pe);
  proxy::Descriptor d{};
  d.opcode = proxy::Opcode::get;
  d.pe = pe;
  d.remote = heap_offset(h, src);
  d.bytes = sizeof(T);
  const proxy::QueueView& q = queue_of(h);
  const uint64_t t = post(h, q, d, true);
  wait_ticket(h, q, t, DeviceOp::g, pe);
  T v;
  const uint64_t raw = *reinterpret_cast<volatile uint64_t*>(&q.results[static_cast<uint32_t>(t) & (q.capacity - 1)]);
  memcpy(&v, &raw, sizeof(T));
  return v;
}

// Signal (set or add) at control- or heap-offset `sig_off` of `pe`; with a payload, put it first.
// Returns the ticket (in queue_of(h)).
__device__ inline uint64_t proxy_signal_at(const DeviceHandle& h, int64_t sig_off, uint64_t value, SignalOp op, int pe,
                                       int64_t remote = 0, const void* local = nullptr, size_t bytes = 0) {
  proxy::Descriptor d{};
  d.opcode = local ? proxy::Opcode::put_signal : proxy::Opcode::signal;
  d.op = static_cast<uint8_t>(op);
  d.pe = pe;
  d.remote = remote;
  d.local = reinterpret_cast<uint64_t>(local);
  d.bytes = bytes;
  d.sig = sig_off;
  d.value = value;
  return post(h, queue_of(h), d);
}

template <class Coop>
__device__ inline void proxy_put_signal(Coop c, const DeviceHandle& h, void* dst, const void* src, size_t bytes, uint64_t* sig,
                                        uint64_t value, SignalOp op, int pe, bool blocking) {
  check_sym(h, dst, bytes, 1, DeviceOp::put_signal, pe);
  check_sym(h, sig, sizeof(uint64_t), 8, DeviceOp::put_signal, pe);
  publish_group(c);
  if (leader(c)) {
    // An empty payload makes it a plain signal.
    const uint64_t t = proxy_signal_at(h, heap_offset(h, sig), value, op, pe, heap_offset(h, dst), bytes ? src : nullptr, bytes);
    if (blocking) wait_ticket(h, queue_of(h), t, DeviceOp::put_signal, pe);
  }
  if (blocking) coop::sync(c);
}

// An atomic through the queue; fetching ones wait and return the old value.
template <class T>
__device__ inline T proxy_atomic(const DeviceHandle& h, T* dst, proxy::AtomicOp aop, T operand, T compare, int pe, bool fetch) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "atomics work on 32- and 64-bit integers");
  check_sym(h, dst, sizeof(T), sizeof(T), DeviceOp::atomic, pe);
  proxy::Descriptor d{};
  d.opcode = proxy::Opcode::atomic;
  d.op = static_cast<uint8_t>(aop);
  d.width = sizeof(T);
  d.pe = pe;
  d.remote = heap_offset(h, dst);
  d.value = static_cast<uint64_t>(operand);
  d.compare = static_cast<uint64_t>(compare);
  const proxy::QueueView& q = queue_of(h);
  const uint64_t t = post(h, q, d, fetch);
  if (!fetch) return T(0);
  wait_ticket(h, q, t, DeviceOp::atomic, pe);
  const uint64_t raw = *reinterpret_cast<volatile uint64_t*>(&q.results[static_cast<uint32_t>(t) & (q.capacity - 1)]);
  return static_cast<T>(raw);
}

}  // namespace gpucomm::device::detail
