// The network thread of carom-view. The blocking Connection is used by this
// thread only: it alternates between sending what the render thread queued and
// a receive with a short timeout, so a command waits at most one timeout.
// Snapshots are moved (not copied) into shared, immutable Frames; the render
// thread takes shared pointers to the newest few under the mutex.

#include "feed.hpp"

#include "scene.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace carom::view {

namespace {

constexpr double kReceiveTimeoutS = 0.02;   // longest a queued command waits
constexpr double kConnectTimeoutS = 3.0;
constexpr double kFirstBackoffS = 0.25;
constexpr double kMaxBackoffS = 5.0;
constexpr double kSilenceS = 3.0;           // no message at all for this long: say so
constexpr std::int64_t kSecond = 1'000'000'000;
constexpr std::int64_t kNoteNs = 4 * kSecond;

std::string address_text(const client::Address& a) {
  const bool v6 = a.host.find(':') != std::string::npos;
  return (v6 ? "[" + a.host + "]" : a.host) + ":" + std::to_string(a.port);
}

bool is_control_refusal(const std::string& error) {
  return error.find("PERMISSION_DENIED") != std::string::npos ||
         error.find("UNAUTHENTICATED") != std::string::npos;
}

}  // namespace

Feed::Feed(FeedOptions options) : options_(std::move(options)) {}

Feed::~Feed() { stop(); }

void Feed::start() {
  stopping_ = false;
  thread_ = std::thread([this] { run(); });
}

void Feed::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::vector<std::shared_ptr<const Frame>> Feed::frames() const {
  std::lock_guard lock(mutex_);
  return {ring_.begin(), ring_.end()};
}

bool Feed::wait_for_snapshot(double timeout_s) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, std::chrono::duration<double>(timeout_s), [this] { return !ring_.empty(); });
}

FeedStatus Feed::status() const {
  std::lock_guard lock(mutex_);
  FeedStatus s = status_;
  if (client::monotonic_ns() > note_until_ns_) s.note.clear();
  return s;
}

void Feed::send(v1::Command command, std::string what) {
  {
    std::lock_guard lock(mutex_);
    if (status_.connected) {
      outbox_.emplace_back(std::move(command), std::move(what));
      return;
    }
  }
  // Not kept for later: a pause pressed while disconnected must not land
  // minutes afterwards on a server that came back.
  set_note(what + ": not connected");
}

void Feed::set_problem(std::string problem) {
  {
    std::lock_guard lock(mutex_);
    if (status_.problem == problem) return;
    status_.problem = problem;
  }
  if (options_.log && !problem.empty()) std::fprintf(stderr, "carom-view: %s\n", problem.c_str());
}

void Feed::set_note(std::string note) {
  if (options_.log) std::fprintf(stderr, "carom-view: %s\n", note.c_str());
  std::lock_guard lock(mutex_);
  status_.note = std::move(note);
  note_until_ns_ = client::monotonic_ns() + kNoteNs;
}

void Feed::sleep_for(double seconds) {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return stopping_.load(); });
}

bool Feed::connect_once(client::Connection* connection) {
  v1::Hello hello;
  hello.set_role(options_.want_control ? v1::ROLE_CONTROLLER : v1::ROLE_VIEWER);
  hello.set_token(options_.token);
  hello.set_client_name(options_.client_name);
  auto* wishes = hello.mutable_wishes();
  wishes->set_velocities(true);  // colour by speed
  wishes->set_velocity_quantum(kViewVelocityQuantum);
  wishes->set_position_quantum(kViewPositionQuantum);  // for the compact stream, the Connection's default
  wishes->set_events(true);      // contact flashes
  wishes->set_min_event_speed(kFlashMinEventSpeed);  // only those that could flash,
  wishes->set_max_events(kMaxEventsPerSnapshot);     // and of those the hardest
  wishes->set_max_rate_hz(options_.max_rate_hz);
  if (connection->connect(options_.address, hello, kConnectTimeoutS)) return true;
  if (!options_.want_control || !is_control_refusal(connection->error())) return false;
  // The server does not let us control it: watch instead, and say why once.
  options_.want_control = false;
  set_note("view only (" + connection->error() + ")" +
           (options_.token.empty() ? "; pass the controller token with --token or CAROM_TOKEN" : ""));
  hello.set_role(v1::ROLE_VIEWER);
  return connection->connect(options_.address, hello, kConnectTimeoutS);
}

void Feed::run() {
  double backoff = kFirstBackoffS;
  const std::string where = address_text(options_.address);
  while (!stopping_) {
    client::Connection connection;
    if (!connect_once(&connection)) {
      char wait[32];
      std::snprintf(wait, sizeof wait, "%.2g s", backoff);
      // Connection::error() repeats the address ("cannot connect to H:P: why"): keep the why.
      std::string why = connection.error();
      if (const std::string prefix = "cannot connect to " + where + ": "; why.rfind(prefix, 0) == 0)
        why.erase(0, prefix.size());
      set_problem("cannot reach carom-server at " + where + ": " + why + "; retrying in " + wait);
      sleep_for(backoff);
      backoff = std::min(backoff * 2, kMaxBackoffS);
      continue;
    }
    const std::uint64_t sequence_before = sequence_;
    {
      std::lock_guard lock(mutex_);
      status_.connected = true;
      status_.control = connection.welcome().control();
      status_.connection = ++connection_;
      status_.server_version = connection.welcome().server_version();
      status_.problem.clear();
    }
    if (options_.log)
      std::fprintf(stderr, "carom-view: connected to %s (%s, %s)\n", where.c_str(),
                   connection.welcome().server_version().c_str(),
                   connection.welcome().control() ? "controller" : "view only");
    serve(&connection);
    bytes_before_ += connection.bytes_received();
    connection.close();
    {
      std::lock_guard lock(mutex_);
      status_.connected = false;
      status_.control = false;
      outbox_.clear();
      status_.snapshots_per_s = 0;
      status_.kbytes_per_s = 0;
      status_.bytes_per_body = 0;
    }
    // A session that delivered a snapshot starts the backoff afresh; one that
    // ends before any (a server that accepts and drops) keeps growing it.
    if (sequence_ > sequence_before) backoff = kFirstBackoffS;
    if (stopping_) break;
    sleep_for(backoff);
    backoff = std::min(backoff * 2, kMaxBackoffS);
  }
}

void Feed::serve(client::Connection* connection) {
  std::int64_t last_heard = client::monotonic_ns();
  std::int64_t last_rates = 0;
  pending_.clear();
  snapshot_times_.clear();
  byte_marks_.clear();
  v1::ServerMessage message;
  while (!stopping_) {
    std::vector<std::pair<v1::Command, std::string>> outbox;
    {
      std::lock_guard lock(mutex_);
      outbox.swap(outbox_);
    }
    for (auto& [command, what] : outbox) {
      if (!connection->welcome().control()) {
        set_note(what + ": view only, the server did not grant control");
        continue;
      }
      command.set_request_id(next_request_++);
      pending_.emplace_back(command.request_id(), what);
      v1::ClientMessage out;
      *out.mutable_command() = std::move(command);
      if (!connection->send(out)) {
        set_problem("lost the server: " + connection->error());
        return;
      }
    }

    const bool got = connection->receive(&message, kReceiveTimeoutS);
    const std::int64_t now = client::monotonic_ns();
    if (now - last_rates > kSecond / 4) {
      last_rates = now;
      byte_marks_.push_back({now, bytes_before_ + connection->bytes_received(), bodies_received_});
      while (byte_marks_.size() > 2 && now - byte_marks_.front().time > kSecond) byte_marks_.pop_front();
      while (!snapshot_times_.empty() && now - snapshot_times_.front() > kSecond) snapshot_times_.pop_front();
      const ByteMark& first = byte_marks_.front();
      const ByteMark& last = byte_marks_.back();
      const double span = static_cast<double>(last.time - first.time) / 1e9;
      const auto per_body = [](std::uint64_t bytes, std::uint64_t bodies) {
        return bodies > 0 ? static_cast<double>(bytes) / static_cast<double>(bodies) : 0.0;
      };
      std::lock_guard lock(mutex_);
      status_.kbytes_per_s = span > 0 ? static_cast<double>(last.bytes - first.bytes) / 1000.0 / span : 0;
      status_.bytes_per_body = per_body(last.bytes - first.bytes, last.bodies - first.bodies);
      status_.bytes_per_body_all = per_body(last.bytes, last.bodies);
      status_.snapshots_per_s = static_cast<double>(snapshot_times_.size());
    }
    if (!got) {
      if (!connection->connected()) {
        set_problem("lost the server: " + connection->error());
        return;
      }
      if (now - last_heard > static_cast<std::int64_t>(kSilenceS * 1e9)) {
        set_problem("no data from the server for " + std::to_string((now - last_heard) / kSecond) + " s");
      }
      continue;
    }
    if (now - last_heard > static_cast<std::int64_t>(kSilenceS * 1e9)) set_problem("");
    last_heard = now;
    switch (message.kind_case()) {
      case v1::ServerMessage::kSnapshot:
        snapshot_times_.push_back(now);
        bodies_received_ += static_cast<std::uint64_t>(message.snapshot().id_size());
        push(std::move(*message.mutable_snapshot()));
        break;
      case v1::ServerMessage::kResult: {
        const auto& r = message.result();
        const auto it = std::find_if(pending_.begin(), pending_.end(),
                                     [&](const auto& p) { return p.first == r.request_id(); });
        std::string what = it == pending_.end() ? "command" : it->second;
        if (it != pending_.end()) pending_.erase(it);
        if (r.code() != v1::OK) set_note(what + ": " + client::code_name(r.code()) + ": " + r.message());
        break;
      }
      case v1::ServerMessage::kError:
        set_problem("the server refused us: " + client::code_name(message.error().code()) + ": " +
                    message.error().message());
        return;
      case v1::ServerMessage::kGoodbye:
        set_problem("the server said goodbye (" + message.goodbye().reason() + ")");
        return;
      default:
        break;  // heartbeats only prove the server is alive
    }
  }
}

void Feed::push(v1::Snapshot&& snapshot) {
  const int n = snapshot.id_size();
  if (snapshot.x_size() != n || snapshot.y_size() != n || snapshot.radius_size() != n) {
    set_problem("ignoring a snapshot whose arrays differ in length (ids " + std::to_string(n) + ", x " +
                std::to_string(snapshot.x_size()) + ", y " + std::to_string(snapshot.y_size()) + ", radius " +
                std::to_string(snapshot.radius_size()) + ")");
    return;
  }
  auto frame = std::make_shared<Frame>();
  frame->snapshot = std::move(snapshot);
  frame->arrival_ns = client::monotonic_ns();
  frame->sequence = ++sequence_;
  frame->connection = connection_;
  const auto& s = frame->snapshot;
  if (s.vx_size() == n && s.vy_size() == n && n > 0) {
    frame->speed.resize(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      const float vx = s.vx(i), vy = s.vy(i);
      frame->speed[static_cast<std::size_t>(i)] = std::sqrt(vx * vx + vy * vy);  // |v| <= 1e9 m/s: no overflow
    }
    // The colour scale follows the bulk of the bodies, not the one fastest.
    std::vector<float> sorted = frame->speed;
    const auto k = static_cast<std::ptrdiff_t>(static_cast<double>(sorted.size() - 1) * 0.95);
    std::nth_element(sorted.begin(), sorted.begin() + k, sorted.end());
    frame->speed_scale = sorted[static_cast<std::size_t>(k)];
  }
  set_problem("");  // data flows: whatever was wrong is over
  {
    std::lock_guard lock(mutex_);
    ring_.push_back(std::move(frame));
    while (ring_.size() > kRing) ring_.pop_front();
  }
  changed_.notify_all();
}

}  // namespace carom::view
