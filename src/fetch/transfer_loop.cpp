#include "transfer_loop.hpp"

#include <algorithm>
#include <cmath>
#include <deque>

#include <spdlog/spdlog.h>

#include "venvfix/base/log.hpp"

namespace venvfix::fetch::detail {

TransferLoop::TransferLoop(const FetchConfig& config, CURLM* multi, CURLSH* share,
                           Progress* progress, std::string_view verb)
    : m_config(config), m_multi(multi), m_share(share), m_progress(progress), m_verb(verb) {}

Clock::duration TransferLoop::backoff(const Transfer& transfer) {
  double delay = 0;
  if (transfer.retry_after()) {
    delay = std::min(*transfer.retry_after(), m_config.max_retry_delay_seconds);
  } else {
    // Exponential with "equal jitter": half fixed, half random, so that parallel clients that
    // failed together do not come back together.
    double ceiling =
        std::min(m_config.max_retry_delay_seconds,
                 m_config.retry_base_delay_seconds * std::pow(2.0, transfer.attempt - 1));
    std::uniform_real_distribution<double> jitter(0.5, 1.0);
    delay = ceiling * jitter(m_random);
  }
  return std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(std::max(0.0, delay)));
}

TransferLoop::Outcome TransferLoop::classify(Transfer& transfer, CURLcode code, Error& error) {
  const std::string url = redact_url(transfer.url());
  if (transfer.local_error()) {
    error = *transfer.local_error();
    return Outcome::failed;
  }
  bool retryable = false;
  if (code == CURLE_OK) {
    long status = transfer.status();
    if (status == 416 && transfer.bytes() > 0) {
      transfer.last_failure = "the server refused to resume (HTTP 416)";
      retryable = transfer.restart().has_value();
    } else if (is_retryable_status(status)) {
      transfer.last_failure = describe_status(status);
      retryable = true;
    } else {
      return Outcome::complete;
    }
  } else if (transfer.range_mismatch()) {
    transfer.last_failure = "the server answered a resumed request with another byte range";
    retryable = transfer.restart().has_value();
  } else {
    transfer.last_failure = describe_curl_error(code, transfer.error_buffer());
    retryable = is_retryable(code);
  }
  if (retryable && transfer.attempt <= m_config.max_retries) {
    spdlog::info("{}: {}; retrying (attempt {} of {})", url, transfer.last_failure,
                 transfer.attempt + 1, m_config.max_retries + 1);
    transfer.not_before = Clock::now() + backoff(transfer);
    return Outcome::retry;
  }
  if (retryable) {
    if (is_retryable_status(transfer.status()) && code == CURLE_OK) return Outcome::complete;
    error = make_error(ExitCode::network, "cannot download {}: {} (gave up after {} attempts)", url,
                       transfer.last_failure, transfer.attempt);
  } else {
    error = make_error(ExitCode::network, "cannot download {}: {}", url, transfer.last_failure);
  }
  return Outcome::failed;
}

struct TransferLoop::RunState {
  std::vector<Transfer*> transfers;
  const std::vector<std::string>& names;
  const std::string& accept;
  std::size_t parallel;
  std::deque<std::size_t> queue;
  std::vector<std::size_t> waiting;  // scheduled for a retry
  std::vector<std::size_t> active;

  bool done() const { return queue.empty() && waiting.empty() && active.empty(); }
};

void TransferLoop::start(RunState& state, std::size_t id) {
  Transfer& transfer = *state.transfers[id];
  CURL* easy = transfer.start_attempt(m_config, m_share, state.accept);
  // curl's private slot carries the transfer's id (+1, so that no id reads as null).
  libcurl().easy_setopt(easy, CURLOPT_PRIVATE,
                        reinterpret_cast<char*>(id + 1));  // NOLINT(performance-no-int-to-ptr)
  libcurl().multi_add_handle(m_multi, easy);
  state.active.push_back(id);
  if (m_progress != nullptr && transfer.attempt == 1) {
    m_progress->started(id, state.names[id], std::nullopt);
  }
}

// Retries that are due go first (they have waited longest), then new transfers.
void TransferLoop::fill_slots(RunState& state) {
  const Clock::time_point now = Clock::now();
  for (auto it = state.waiting.begin();
       it != state.waiting.end() && state.active.size() < state.parallel;) {
    if (state.transfers[*it]->not_before <= now) {
      start(state, *it);
      it = state.waiting.erase(it);
    } else {
      ++it;
    }
  }
  while (state.active.size() < state.parallel && !state.queue.empty()) {
    start(state, state.queue.front());
    state.queue.pop_front();
  }
}

void TransferLoop::abandon_all(RunState& state) {
  for (std::size_t id : state.active) {
    libcurl().multi_remove_handle(m_multi, state.transfers[id]->easy());
    state.transfers[id]->end_attempt();
  }
  state.active.clear();
}

// Hands each finished transfer to on_complete, or schedules its retry; the first error ends
// the run with every transfer still in flight abandoned.
Status TransferLoop::collect_finished(RunState& state, const OnComplete& on_complete) {
  int left = 0;
  while (CURLMsg* message = libcurl().multi_info_read(m_multi, &left)) {
    if (message->msg != CURLMSG_DONE) continue;
    char* tag = nullptr;
    libcurl().easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, &tag);
    std::size_t id = static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(tag)) - 1;
    Transfer& transfer = *state.transfers[id];
    libcurl().multi_remove_handle(m_multi, transfer.easy());
    state.active.erase(std::find(state.active.begin(), state.active.end(), id));
    Error error;
    Outcome outcome = classify(transfer, message->data.result, error);
    Status status = ok();
    if (outcome == Outcome::complete) status = on_complete(id, transfer);
    transfer.end_attempt();
    if (outcome == Outcome::failed) status = std::move(error);
    if (!status) {
      abandon_all(state);
      return status;
    }
    if (outcome == Outcome::retry) {
      state.waiting.push_back(id);
    } else if (m_progress != nullptr) {
      m_progress->finished(id, transfer.bytes());
    }
  }
  return ok();
}

void TransferLoop::show_progress(const RunState& state) {
  if (m_progress == nullptr) return;
  for (std::size_t id : state.active) {
    m_progress->update(id, state.transfers[id]->bytes(), state.transfers[id]->expected_total());
  }
  m_progress->tick();
}

// Offers each paused transfer's bytes to its stream again where they now fit.
void TransferLoop::resume_paused(RunState& state) {
  for (std::size_t id : state.active) {
    state.transfers[id]->resume_if_room();
  }
}

// Sleeps until curl has work, the next retry is due, or the progress line needs a redraw.
void TransferLoop::wait_for_work(const RunState& state) {
  auto timeout = std::chrono::milliseconds(100);
  if (state.active.empty() && !state.waiting.empty()) {
    Clock::time_point due = Clock::time_point::max();
    for (std::size_t id : state.waiting) due = std::min(due, state.transfers[id]->not_before);
    timeout = std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(due - Clock::now()),
                         std::chrono::milliseconds(0), std::chrono::milliseconds(1000));
  } else if (!state.waiting.empty()) {
    timeout = std::chrono::milliseconds(20);
  }
  // A paused stream makes room as its reader goes on: offer its bytes again soon.
  for (std::size_t id : state.active) {
    if (state.transfers[id]->paused()) timeout = std::min(timeout, std::chrono::milliseconds(1));
  }
  libcurl().multi_poll(m_multi, nullptr, 0, static_cast<int>(timeout.count()), nullptr);
}

Status TransferLoop::run(std::vector<Transfer*> transfers, const std::vector<std::string>& names,
                         const std::string& accept, const OnComplete& on_complete,
                         const BetweenPolls& between_polls) {
  RunState state{std::move(transfers),
                 names,
                 accept,
                 static_cast<std::size_t>(std::clamp(m_config.parallel, 1, 64)),
                 {},
                 {},
                 {}};
  for (std::size_t i = 0; i < state.transfers.size(); ++i) state.queue.push_back(i);
  while (!state.done()) {
    fill_slots(state);
    int running = 0;
    libcurl().multi_perform(m_multi, &running);
    resume_paused(state);
    VENVFIX_TRY(collect_finished(state, on_complete));
    if (between_polls) {
      if (Status status = between_polls(); !status) {
        abandon_all(state);
        return status;
      }
    }
    show_progress(state);
    if (state.done()) break;
    // A slot freed by a finished transfer is filled at once, not after the next poll.
    if (!state.queue.empty() && state.active.size() < state.parallel) continue;
    wait_for_work(state);
  }
  return ok();
}

}  // namespace venvfix::fetch::detail
