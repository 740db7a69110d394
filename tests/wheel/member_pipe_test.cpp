// MemberPipe: a member's bytes handed from the inflating thread to the one that hashes and
// writes them. Every byte arrives once and in order, whatever the piece sizes and however slow
// the consumer, copied in (push) or written into the ring (next_slot, commit); a consumer's
// error stops the producer instead of blocking it; dropping the pipe early ends its thread.
#include "wheel/member_pipe.hpp"

#include <gtest/gtest.h>

#include <algorithm>
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

// The inflater's way: each slot filled in place, in pieces of any size up to a slot, and asked
// for again (the same slot) when a call produced nothing.
TEST(MemberPipe, SlotsFilledInPlaceArriveOnceAndInOrder) {
  const std::vector<std::byte> input = random_bytes(5u << 20, 6);
  std::vector<std::byte> output;
  std::mt19937 pace(7);
  MemberPipe pipe([&](std::span<const std::byte> piece) {
    output.insert(output.end(), piece.begin(), piece.end());
    if (pace() % 8 == 0) std::this_thread::sleep_for(std::chrono::microseconds(300));
    return ok();
  });
  std::mt19937 sizes(8);
  for (std::size_t at = 0; at < input.size();) {
    Result<std::span<std::byte>> slot = pipe.next_slot();
    ASSERT_TRUE(slot);
    ASSERT_EQ(slot->size(), MemberPipe::k_slot);
    Result<std::span<std::byte>> again = pipe.next_slot();  // nothing committed in between
    ASSERT_TRUE(again);
    EXPECT_EQ(again->data(), slot->data());
    const std::size_t size =
        std::min<std::size_t>({input.size() - at, slot->size(), 1 + sizes() % MemberPipe::k_slot});
    std::copy_n(input.begin() + static_cast<std::ptrdiff_t>(at), size, slot->begin());
    pipe.commit(size);
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
  Result<std::span<std::byte>> slot = pipe.next_slot();  // the inflater's way is stopped too
  ASSERT_FALSE(slot);
  EXPECT_EQ(slot.error().message, "member.so: No space left on device");
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
