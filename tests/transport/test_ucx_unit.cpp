// Unit tests of the UCX transport's pieces that need no UCX: the address record each PE
// publishes, and the pool of operation records.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "exchange.hpp"
#include "gpucomm/core/error.hpp"
#include "op_pool.hpp"

namespace ucx = gpucomm::transport::ucx;

TEST(UcxExchange, RecordRoundTrip) {
  ucx::PeerInfo in;
  in.address = std::string("\0addr\xff", 6);
  in.rkey = "key";
  in.heap_base = 0x7f0000001000;
  in.heap_bytes = 1 << 20;
  in.heap_on_device = true;
  in.reaches = {true, false, true};
  ucx::PeerInfo out = ucx::unpack_info(ucx::pack_info(in), 1, 3);
  EXPECT_TRUE(out.error.empty());
  EXPECT_EQ(out.address, in.address);
  EXPECT_EQ(out.rkey, in.rkey);
  EXPECT_EQ(out.heap_base, in.heap_base);
  EXPECT_EQ(out.heap_bytes, in.heap_bytes);
  EXPECT_TRUE(out.heap_on_device);
  EXPECT_EQ(out.reaches, in.reaches);
}

TEST(UcxExchange, ErrorRecordCarriesOnlyTheError) {
  ucx::PeerInfo in;
  in.error = "ucp_init failed";
  ucx::PeerInfo out = ucx::unpack_info(ucx::pack_info(in), 2, 4);
  EXPECT_EQ(out.error, "ucp_init failed");
  EXPECT_TRUE(out.address.empty());
}

TEST(UcxExchange, MalformedRecordsNameThePe) {
  ucx::PeerInfo in;
  in.address = "a";
  in.reaches = {true, true};
  const std::string good = ucx::pack_info(in);
  auto expect_protocol = [](const std::string& blob, int size, const char* why) {
    try {
      ucx::unpack_info(blob, 3, size);
      ADD_FAILURE() << "accepted: " << why;
    } catch (const gpucomm::Error& e) {
      EXPECT_EQ(e.code(), gpucomm::Errc::protocol) << e.what();
      EXPECT_NE(std::string(e.what()).find("PE 3"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  expect_protocol(good.substr(0, good.size() - 1), 2, "truncated");
  expect_protocol(good + "x", 2, "trailing bytes");
  expect_protocol("12345678" + good.substr(8), 2, "foreign record");
  expect_protocol(good, 4, "the job has 4");
}

TEST(UcxOpPool, GrowsKeepsAddressesAndFindsByIndex) {
  ucx::OpPool pool(nullptr, 4);
  std::vector<ucx::Op*> ops;
  ops.reserve(10);
  for (int i = 0; i < 10; ++i) ops.push_back(pool.acquire());
  EXPECT_EQ(pool.in_use(), 10u);
  std::set<uint32_t> indices;
  for (ucx::Op* op : ops) {
    EXPECT_EQ(pool.find(op->index), op);
    indices.insert(op->index);
  }
  EXPECT_EQ(indices.size(), 10u);
  EXPECT_EQ(pool.find(12), nullptr);  // 3 chunks of 4
  const uint32_t generation = ops[0]->generation;
  pool.release(ops[0]);
  ucx::Op* again = pool.acquire();
  EXPECT_EQ(again, ops[0]);
  EXPECT_NE(again->generation, generation);  // a stale token no longer matches
  EXPECT_EQ(pool.in_use(), 10u);
}

TEST(UcxOpPool, FifoKeepsIssueOrder) {
  ucx::OpPool pool(nullptr, 8);
  ucx::OpFifo fifo;
  std::vector<ucx::Op*> ops;
  for (int i = 0; i < 5; ++i) {
    ops.push_back(pool.acquire());
    ops.back()->seq = static_cast<uint64_t>(i);
    fifo.push(ops.back());
  }
  for (int i = 0; i < 5; ++i) EXPECT_EQ(fifo.pop(), ops[static_cast<size_t>(i)]);
  EXPECT_TRUE(fifo.empty());
  fifo.push(ops[2]);
  EXPECT_EQ(fifo.pop(), ops[2]);
  EXPECT_TRUE(fifo.empty());
}
