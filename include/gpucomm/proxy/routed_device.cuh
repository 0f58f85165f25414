#pragma once
// The one-sided operations as descriptors, for PEs a proxy serves (the device API in
// gpucomm/device calls these when proxy::serves() says so). One descriptor per operation,
// whatever its size: the agent moves the bytes (copy engine, SM copies or UCX).
//   blocking forms   post, then wait for the ticket's completion (src reusable, dst filled)
//   non-blocking     post only; quiet(c, h) completes them
//   g, fetching atomics   the result lands in the queue's result slot of the ticket
#include <cstring>
#include <cuda/std/type_traits>

#include "gpucomm/proxy/queue_device.cuh"

namespace gpucomm::proxy {

template <class Coop>
__device__ inline void routed_transfer(Coop c, const DeviceHandle& h, Opcode opcode, int64_t remote, const void* local,
                                       size_t bytes, int pe, bool blocking, DeviceOp op) {
  detail::publish_group(c);
  if (detail::leader(c)) {
    Descriptor d{};
    d.opcode = opcode;
    d.pe = pe;
    d.remote = remote;
    d.local = reinterpret_cast<uint64_t>(local);
    d.bytes = bytes;
    const QueueView& q = queue_of(h);
    const uint64_t t = post(h, q, d);
    if (blocking) wait_ticket(h, q, t, op, pe);
  }
  if (blocking) coop::sync(c);
}

template <class Coop>
__device__ inline void routed_put(Coop c, const DeviceHandle& h, void* dst, const void* src, size_t bytes, int pe,
                                  bool blocking) {
  detail::check_sym(h, dst, bytes, 1, DeviceOp::put, pe);
  routed_transfer(c, h, Opcode::put, detail::heap_offset(h, dst), src, bytes, pe, blocking, DeviceOp::put);
}

template <class Coop>
__device__ inline void routed_get(Coop c, const DeviceHandle& h, void* dst, const void* src, size_t bytes, int pe,
                                  bool blocking) {
  detail::check_sym(h, src, bytes, 1, DeviceOp::get, pe);
  routed_transfer(c, h, Opcode::get, detail::heap_offset(h, src), dst, bytes, pe, blocking, DeviceOp::get);
}

template <class T>
__device__ inline void routed_p(const DeviceHandle& h, T* dst, T value, int pe) {
  static_assert(sizeof(T) <= 8, "p() through a proxy carries at most 8 bytes inline");
  detail::check_sym(h, dst, sizeof(T), alignof(T), DeviceOp::p, pe);
  Descriptor d{};
  d.opcode = Opcode::put_inline;
  d.pe = pe;
  d.remote = detail::heap_offset(h, dst);
  d.bytes = sizeof(T);
  memcpy(&d.value, &value, sizeof(T));
  post(h, queue_of(h), d);
}

template <class T>
__device__ inline T routed_g(const DeviceHandle& h, const T* src, int pe) {
  static_assert(sizeof(T) <= 8, "g() through a proxy returns at most 8 bytes");
  detail::check_sym(h, src, sizeof(T), alignof(T), DeviceOp::g, pe);
  Descriptor d{};
  d.opcode = Opcode::get;
  d.pe = pe;
  d.remote = detail::heap_offset(h, src);
  d.bytes = sizeof(T);
  const QueueView& q = queue_of(h);
  const uint64_t t = post(h, q, d, true);
  wait_ticket(h, q, t, DeviceOp::g, pe);
  const uint64_t raw = result_of(q, t);
  T v;
  memcpy(&v, &raw, sizeof(T));
  return v;
}

// Signal (set or add) at control- or heap-offset `sig_off` of `pe`; with a payload, put it first.
// Returns the ticket (in queue_of(h)).
__device__ inline uint64_t routed_signal_at(const DeviceHandle& h, int64_t sig_off, uint64_t value, SignalOp op, int pe,
                                            int64_t remote = 0, const void* local = nullptr, size_t bytes = 0) {
  Descriptor d{};
  d.opcode = local ? Opcode::put_signal : Opcode::signal;
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
__device__ inline void routed_put_signal(Coop c, const DeviceHandle& h, void* dst, const void* src, size_t bytes,
                                         uint64_t* sig, uint64_t value, SignalOp op, int pe, bool blocking) {
  detail::check_sym(h, dst, bytes, 1, DeviceOp::put_signal, pe);
  detail::check_sym(h, sig, sizeof(uint64_t), 8, DeviceOp::put_signal, pe);
  detail::publish_group(c);
  if (detail::leader(c)) {
    uint64_t t;
    if (bytes > 0 && bytes <= 8) {
      // Up to 8 bytes travel in the descriptor: the agent moves no data from this GPU's memory (a
      // CPU proxy writes payload and signal with one batch of stream memory operations). The
      // leader reads the source after the group's publish, so it sees what the group wrote.
      Descriptor d{};
      d.opcode = Opcode::put_signal_inline;
      d.op = static_cast<uint8_t>(op);
      d.pe = pe;
      d.remote = detail::heap_offset(h, dst);
      d.bytes = bytes;
      d.sig = detail::heap_offset(h, sig);
      d.value = value;
      t = post(h, queue_of(h), d, false, src);
    } else {
      // An empty payload makes it a plain signal.
      t = routed_signal_at(h, detail::heap_offset(h, sig), value, op, pe, detail::heap_offset(h, dst),
                           bytes ? src : nullptr, bytes);
    }
    if (blocking) wait_ticket(h, queue_of(h), t, DeviceOp::put_signal, pe);
  }
  if (blocking) coop::sync(c);
}

// An atomic through the queue; fetching ones wait and return the old value.
template <class T>
__device__ inline T routed_atomic(const DeviceHandle& h, T* dst, AtomicOp aop, T operand, T compare, int pe,
                                  bool fetch) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "atomics work on 32- and 64-bit integers");
  detail::check_sym(h, dst, sizeof(T), sizeof(T), DeviceOp::atomic, pe);
  Descriptor d{};
  d.opcode = Opcode::atomic;
  d.op = static_cast<uint8_t>(aop);
  d.width = sizeof(T);
  d.pe = pe;
  d.remote = detail::heap_offset(h, dst);
  d.value = static_cast<uint64_t>(operand);
  d.compare = static_cast<uint64_t>(compare);
  const QueueView& q = queue_of(h);
  const uint64_t t = post(h, q, d, fetch);
  if (!fetch) return T(0);
  wait_ticket(h, q, t, DeviceOp::atomic, pe);
  return static_cast<T>(result_of(q, t));
}

}  // namespace gpucomm::proxy
