// Drives many Transfers through one curl multi handle: at most `parallel` at once, each retried
// with exponential back-off and jitter (or after Retry-After) while its failure is transient
// and attempts remain. The caller decides what a finished transfer means.
#pragma once

#include <functional>
#include <random>
#include <vector>

#include "progress.hpp"
#include "transfer.hpp"
#include "venvfix/base/result.hpp"

namespace venvfix::fetch::detail {

class TransferLoop {
 public:
  // Called once per transfer whose last attempt completed at the HTTP level (any status that
  // is not retried); an Error stops the whole loop.
  using OnComplete = std::function<Status(std::size_t id, Transfer&)>;
  // Called after every round of curl's work (and after curl_multi_wakeup ends a wait): other
  // work the caller settles on this thread meanwhile; an Error stops the whole loop.
  using BetweenPolls = std::function<Status()>;

  // `verb` words the errors: "download" (files) or "fetch" (pages).
  TransferLoop(const FetchConfig& config, CURLM* multi, CURLSH* share, Progress* progress,
               std::string_view verb);

  // Runs `transfers` (ids are their positions) to completion. `retry_status_codes`: whether
  // 429/5xx responses are retried (always true for downloads; page fetches too).
  // Returns the first error; transfers still in flight are then abandoned.
  Status run(std::vector<Transfer*> transfers, const std::vector<std::string>& names,
             const std::string& accept, const OnComplete& on_complete,
             const BetweenPolls& between_polls = {});

 private:
  enum class Outcome { complete, retry, failed };
  struct RunState;  // the queues of one run()
  Outcome classify(Transfer& transfer, CURLcode code, Error& error);
  void start(RunState& state, std::size_t id);
  void fill_slots(RunState& state);
  Status collect_finished(RunState& state, const OnComplete& on_complete);
  void abandon_all(RunState& state);
  void show_progress(const RunState& state);
  void resume_paused(RunState& state);
  void wait_for_work(const RunState& state);
  Clock::duration backoff(const Transfer& transfer);

  const FetchConfig& m_config;
  CURLM* m_multi;
  CURLSH* m_share;
  Progress* m_progress;
  std::string_view m_verb;
  std::mt19937_64 m_random{std::random_device{}()};
};

}  // namespace venvfix::fetch::detail
