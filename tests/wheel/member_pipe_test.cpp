// MemberPipe: a member's bytes handed from the inflating thread to the one that hashes and
// writes them. Every byte arrives once and in order, whatever the piece sizes and however slow
// the consumer; a consumer's error stops the producer instead of blocking it; dropping the pipe
// early ends its thread.
#include "wheel/member_pipe.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

namespace venvfix::wheel::detail {
namespace {

std::vector<std::byte> random_bytes(std::size_t size, unsigned seed) {
  std::mt19937 random(seed);
  std::vector<std::byte> out(size);
  for (std::byte& b : out) b = static_cast<std::byte>(random());
  return out;
}

TEST(MemberPipe, EveryByteArrivesOnceAndInOrder) {
  const std::vector<std::byte> input = random_bytes(9u << 20, 1);
  std::vector<std::byte> output;
  std::mt19937 pace(2);
  MemberPipe pipe([&](std::span<const std::byte> piece) {
    EXPECT_LE(piece.size(), MemberPipe::k_slot);
    output.insert(output.end(), piece.begin(), piece.end());
    if (pace() % 16 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    return ok();
  });
  // Pieces from 1 byte to over two slots, as the inflater and a stored member hand them on.
  std::mt19937 sizes(3);
  for (std::size_t at = 0; at < input.size();) {
    const std::size_t size = std::min<std::size_t>(input.size() - at, 1 + sizes() % (600u << 10));
    ASSERT_TRUE(pipe.push(std::span(input).subspan(at, size)));
    at += size;
  }
  ASSERT_TRUE(pipe.finish());
  EXPECT_TRUE(output == input);
}

TEST(MemberPipe, AConsumersErrorStopsTheProducerAndIsReturned) {
  const std::vector<std::byte> input = random_bytes(MemberPipe::k_slot, 4);
  int calls = 0;
  MemberPipe pipe([&](std::span<const std::byte>) -> Status {
    if (++calls == 3) return make_error(ExitCode::error, "member.so: No space left on device");
    return ok();
  });
  // Far more than the ring holds: the producer would block for ever if the error did not wake it.
  Status pushed = ok();
  for (int i = 0; i < 100 && pushed; ++i) pushed = pipe.push(input);
  ASSERT_FALSE(pushed);
  EXPECT_EQ(pushed.error().message, "member.so: No space left on device");
  Status finished = pipe.finish();
  ASSERT_FALSE(finished);
  EXPECT_EQ(finished.error().message, "member.so: No space left on device");
  EXPECT_EQ(calls, 3);  // nothing is consumed after the error
}

TEST(MemberPipe, DroppingThePipeEndsItsThreadWithoutConsumingTheRest) {
  const std::vector<std::byte> input = random_bytes(MemberPipe::k_slot, 5);
  std::atomic<int> calls = 0;
  {
    MemberPipe pipe([&](std::span<const std::byte>) {
      ++calls;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      return ok();
    });
    for (std::size_t i = 0; i < MemberPipe::k_slots; ++i) ASSERT_TRUE(pipe.push(input));
  }  // a read that failed midway: no finish()
  EXPECT_LT(calls.load(), static_cast<int>(MemberPipe::k_slots));
}

}  // namespace
}  // namespace venvfix::wheel::detail
