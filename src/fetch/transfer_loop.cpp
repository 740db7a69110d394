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

Status TransferLoop::run(std::vector<Transfer*> transfers, const std::vector<std::string>& names,
                         const std::string& accept, const OnComplete& on_complete) {
  std::deque<std::size_t> queue;
  for (std::size_t i = 0; i < transfers.size(); ++i) queue.push_back(i);
  std::vector<std::size_t> waiting;  // scheduled for a retry
  std::vector<std::size_t> active;
  const std::size_t parallel = static_cast<std::size_t>(std::clamp(m_config.parallel, 1, 64));

  auto start = [&](std::size_t id) {
    CURL* easy = transfers[id]->start_attempt(m_config, m_share, accept);
    curl_easy_setopt(easy, CURLOPT_PRIVATE, reinterpret_cast<char*>(id + 1));
    curl_multi_add_handle(m_multi, easy);
    active.push_back(id);
    if (m_progress != nullptr && transfers[id]->attempt == 1) {
      m_progress->started(id, names[id], std::nullopt);
    }
  };
  auto abandon_all = [&] {
    for (std::size_t id : active) {
      curl_multi_remove_handle(m_multi, transfers[id]->easy());
      transfers[id]->end_attempt();
    }
    active.clear();
  };

  while (!queue.empty() || !waiting.empty() || !active.empty()) {
    Clock::time_point now = Clock::now();
    // Retries that are due go first: they have been waiting longest.
    for (auto it = waiting.begin(); it != waiting.end() && active.size() < parallel;) {
      if (transfers[*it]->not_before <= now) {
        start(*it);
        it = waiting.erase(it);
      } else {
        ++it;
      }
    }
    while (active.size() < parallel && !queue.empty()) {
      start(queue.front());
      queue.pop_front();
    }
    int running = 0;
    curl_multi_perform(m_multi, &running);
    int left = 0;
    while (CURLMsg* message = curl_multi_info_read(m_multi, &left)) {
      if (message->msg != CURLMSG_DONE) continue;
      char* tag = nullptr;
      curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, &tag);
      std::size_t id = static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(tag)) - 1;
      CURLcode code = message->data.result;
      Transfer& transfer = *transfers[id];
      curl_multi_remove_handle(m_multi, transfer.easy());
      active.erase(std::find(active.begin(), active.end(), id));
      Error error;
      Outcome outcome = classify(transfer, code, error);
      if (outcome == Outcome::complete) {
        Status status = on_complete(id, transfer);
        transfer.end_attempt();
        if (!status) {
          abandon_all();
          return status;
        }
        if (m_progress != nullptr) m_progress->finished(id, transfer.bytes());
      } else {
        transfer.end_attempt();
        if (outcome == Outcome::failed) {
          abandon_all();
          return error;
        }
        waiting.push_back(id);
      }
    }
    if (m_progress != nullptr) {
      for (std::size_t id : active) {
        m_progress->update(id, transfers[id]->bytes(), transfers[id]->expected_total());
      }
      m_progress->tick();
    }
    if (queue.empty() && waiting.empty() && active.empty()) break;
    // A slot freed by a finished transfer is filled at once, not after the next poll.
    if (!queue.empty() && active.size() < parallel) continue;
    // Sleep until curl has work, the next retry is due, or the progress line needs a redraw.
    auto timeout = std::chrono::milliseconds(100);
    if (active.empty() && !waiting.empty()) {
      Clock::time_point due = Clock::time_point::max();
      for (std::size_t id : waiting) due = std::min(due, transfers[id]->not_before);
      timeout =
          std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(due - Clock::now()),
                     std::chrono::milliseconds(0), std::chrono::milliseconds(1000));
    } else if (!waiting.empty()) {
      timeout = std::chrono::milliseconds(20);
    }
    curl_multi_poll(m_multi, nullptr, 0, static_cast<int>(timeout.count()), nullptr);
  }
  return ok();
}

}  // namespace venvfix::fetch::detail
