// The snapshot thread: waits for a capture, encodes it (snapshot.cpp), hands
// the frames to every subscribed session (hub.cpp, each session's strand
// then writes), then sends the results that were waiting for that snapshot.

#include "publisher.hpp"

#include "hub.hpp"
#include "session.hpp"
#include "tick_times.hpp"

namespace carom::server {

namespace {
// Captures kept for reuse: one being filled, one waiting, one being encoded.
constexpr std::size_t kSpares = 3;
}  // namespace

void SnapshotPublisher::start() { thread_ = std::thread([this] { run(); }); }

void SnapshotPublisher::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

std::unique_ptr<SnapshotCapture> SnapshotPublisher::buffer() {
  {
    std::lock_guard lock(mutex_);
    if (!spare_.empty()) {
      auto c = std::move(spare_.back());
      spare_.pop_back();
      return c;
    }
  }
  return std::make_unique<SnapshotCapture>();
}

void SnapshotPublisher::publish(std::unique_ptr<SnapshotCapture> capture) {
  std::unique_ptr<SnapshotCapture> replaced;
  {
    std::lock_guard lock(mutex_);
    if (pending_) {
      capture->absorb(*pending_, kMaxEvents);
      replaced = std::move(pending_);
    }
    pending_ = std::move(capture);
    if (replaced && spare_.size() < kSpares) spare_.push_back(std::move(replaced));
  }
  if (replaced) hub_.snapshots_skipped.fetch_add(hub_.subscribers());
  cv_.notify_one();
}

void SnapshotPublisher::refresh_timing(std::uint64_t late) {
  timing_.Clear();
  window_.fill(late, &timing_);
  timing_at_ = std::chrono::steady_clock::now();
}

void SnapshotPublisher::run() {
  SnapshotFrames frames;
  for (;;) {
    std::unique_ptr<SnapshotCapture> c;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return pending_ != nullptr || stopping_; });
      if (!pending_) return;
      c = std::move(pending_);
    }
    c->timing.apply_to(&window_, &window_generation_);
    encoder_.encode(*c, timing_, &frames);
    hub_.broadcast(frames);
    for (auto& [to, result] : c->after) send_result(to, std::move(result));
    frames = {};
    // Snapshots carry window figures at most a second old, worked out after
    // the hand-off so that they never delay one.
    if (std::chrono::steady_clock::now() - timing_at_ >= std::chrono::seconds(1)) refresh_timing(c->timing.late);
    c->after.clear();
    c->events.clear();
    c->events_dropped = 0;
    c->timing.clear();
    std::lock_guard lock(mutex_);
    if (spare_.size() < kSpares) spare_.push_back(std::move(c));
  }
}

}  // namespace carom::server
