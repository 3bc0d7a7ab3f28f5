// Hub: mutex-protected registry and queue. The simulation and snapshot
// threads hold a lock only to copy a list of sessions or to swap the queue
// out, never while encoding or stepping.

#include "hub.hpp"

#include <algorithm>

#include "session.hpp"

namespace carom::server {

bool Hub::add(const std::shared_ptr<Session>& session, std::uint64_t* id) {
  std::lock_guard lock(sessions_mutex_);
  if (closing_.load() || sessions_.size() >= options_.max_clients) return false;
  *id = next_session_++;
  sessions_[*id] = Entry{session, -1, {}};
  connections_total.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void Hub::subscribe(std::uint64_t id, int variant, const StreamKey& key) {
  {
    std::lock_guard lock(sessions_mutex_);
    if (auto it = sessions_.find(id); it != sessions_.end()) {
      it->second.variant = variant;
      it->second.key = key;
    }
  }
  resend_.store(true);
  wake();
}

void Hub::remove(std::uint64_t id) {
  {
    std::lock_guard lock(sessions_mutex_);
    sessions_.erase(id);
    if (!sessions_.empty()) return;
  }
  empty_cv_.notify_all();
}

bool Hub::wait_until_empty(std::chrono::steady_clock::duration timeout) {
  std::unique_lock lock(sessions_mutex_);
  return empty_cv_.wait_for(lock, timeout, [&] { return sessions_.empty(); });
}

std::size_t Hub::clients() const {
  std::lock_guard lock(sessions_mutex_);
  return sessions_.size();
}

unsigned Hub::needed_variants() const {
  std::lock_guard lock(sessions_mutex_);
  unsigned mask = 0;
  for (const auto& [id, e] : sessions_) {
    if (e.variant >= 0) mask |= 1u << e.variant;
  }
  return mask;
}

std::vector<std::pair<int, StreamKey>> Hub::needed_keyed(unsigned* unkeyed) const {
  std::lock_guard lock(sessions_mutex_);
  std::vector<std::pair<int, StreamKey>> out;
  if (unkeyed != nullptr) *unkeyed = 0;
  for (const auto& [id, e] : sessions_) {
    if (e.variant < 0) continue;
    if (!SnapshotFrames::is_keyed(e.variant, e.key)) {
      if (unkeyed != nullptr) *unkeyed |= 1u << e.variant;
      continue;
    }
    const std::pair<int, StreamKey> want{e.variant, e.key};
    if (std::find(out.begin(), out.end(), want) == out.end()) out.push_back(want);
  }
  return out;
}

std::size_t Hub::subscribers() const {
  std::lock_guard lock(sessions_mutex_);
  std::size_t n = 0;
  for (const auto& [id, e] : sessions_) n += e.variant >= 0 ? 1 : 0;
  return n;
}

void Hub::broadcast(const SnapshotFrames& frames) {
  struct Target {
    std::shared_ptr<Session> session;
    int variant;
    StreamKey key;
  };
  std::vector<Target> targets;
  {
    std::lock_guard lock(sessions_mutex_);
    targets.reserve(sessions_.size());
    for (const auto& [id, e] : sessions_) {
      if (e.variant < 0) continue;
      if (auto s = e.session.lock()) targets.push_back({std::move(s), e.variant, e.key});
    }
  }
  for (const Target& t : targets) {
    const auto table = (t.variant & kVariantBodyTables) != 0 ? frames.table : nullptr;
    if (SnapshotFrames::is_keyed(t.variant, t.key)) {
      const SnapshotFrames::Keyed* keyed = frames.keyed_for(t.variant, t.key);
      if (keyed == nullptr) continue;  // subscribed after the capture
      if (keyed->snapshot) t.session->deliver_compact(keyed->snapshot, table);
      if (keyed->frame) t.session->deliver_stream(keyed->frame, true, table);
      continue;
    }
    const auto& frame = frames.frames[static_cast<std::size_t>(t.variant)];
    if (frame) t.session->deliver_stream(frame, true, table);
  }
}

void Hub::broadcast_stream(const std::shared_ptr<const std::string>& frame) {
  std::vector<std::shared_ptr<Session>> targets;
  {
    std::lock_guard lock(sessions_mutex_);
    for (const auto& [id, e] : sessions_) {
      if (auto s = e.session.lock()) targets.push_back(std::move(s));
    }
  }
  for (auto& session : targets) session->deliver_stream(frame, false);
}

void Hub::goodbye_all(const std::string& reason) {
  std::vector<std::shared_ptr<Session>> targets;
  {
    std::lock_guard lock(sessions_mutex_);
    closing_.store(true);
    for (const auto& [id, e] : sessions_) {
      if (auto s = e.session.lock()) targets.push_back(std::move(s));
    }
  }
  for (auto& session : targets) session->goodbye(reason);
}

void Hub::submit(const std::shared_ptr<Session>& from, v1::Command command) {
  {
    std::lock_guard lock(queue_mutex_);
    queue_.push_back(PendingCommand{next_sequence_++, from, std::move(command)});
  }
  queue_cv_.notify_one();
}

void Hub::wait_commands(std::chrono::steady_clock::time_point deadline, std::vector<PendingCommand>* out) {
  std::unique_lock lock(queue_mutex_);
  queue_cv_.wait_until(lock, deadline, [&] { return !queue_.empty() || woken_; });
  woken_ = false;
  out->clear();
  out->swap(queue_);
}

void Hub::wake() {
  {
    std::lock_guard lock(queue_mutex_);
    woken_ = true;
  }
  queue_cv_.notify_one();
}

void Hub::set_public(PublicState state) {
  std::lock_guard lock(public_mutex_);
  public_ = std::move(state);
}

PublicState Hub::get_public() const {
  std::lock_guard lock(public_mutex_);
  return public_;
}

}  // namespace carom::server
