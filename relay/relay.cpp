// Relay: the composition, as server.cpp's, with the simulation and snapshot
// threads replaced by one upstream thread. Reads: the upstream's messages (a
// blocking carom::client::Connection, compact stream with velocities, and
// events with their speeds while a viewer here wants them, at the loosest of
// their thresholds)
// and the hub's command queue. Writes: each upstream snapshot, decoded, as a
// SnapshotCapture that SnapshotEncoder encodes for the downstream variants
// exactly as the server does (the state hash and stats are the upstream's,
// carried in the capture); the hub's public facts from the upstream Welcome;
// commands forwarded upstream under relay request ids, and their results
// back to the session that sent them under its own.
//
// The upstream thread encodes and broadcasts in line rather than through a
// SnapshotPublisher: there is no tick to keep short here, and a command's
// result that the upstream sent after a snapshot must reach the viewer after
// that snapshot too. An encoder that falls behind makes the upstream skip
// frames for this relay (latest wins there), never grows memory here.

#include "relay.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <spdlog/spdlog.h>
#include <thread>
#include <vector>

#include "carom/proto/framing.hpp"
#include "hub.hpp"
#include "listener.hpp"
#include "session.hpp"
#include "snapshot.hpp"

namespace carom::relay {

namespace asio = boost::asio;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using server::Hub;

namespace {

// How long a receive waits before the thread looks at the command queue:
// the most a forwarded command waits here.
constexpr double kPollSeconds = 0.005;
// Downstream heartbeats while the upstream is away.
constexpr std::chrono::seconds kHeartbeatPeriod{1};
// An upstream that sends nothing for this long is taken for dead (a running
// server sends snapshots, a paused one a heartbeat a second).
constexpr std::chrono::seconds kUpstreamSilence{10};
// Events are asked for upstream while some viewer here wants them, and
// dropped (or asked for with a higher threshold, a smaller cap or a coarser
// quantum) this long after the last viewer that needed them so left (each
// change is a reconnection).
constexpr std::chrono::seconds kEventsLinger{10};
// How often the upstream thread looks at what the viewers want.
constexpr std::chrono::milliseconds kWishesPeriod{100};

std::string address_name(const client::Address& a) { return a.host + ":" + std::to_string(a.port); }

// What is asked for upstream: the events (whether any, the lowest threshold
// and the largest cap, 0: none, that the viewers here wish) and the compact
// stream's quanta (the finest any viewer here wishes; 0: the server's
// default). The quanta matter for exactness: the relay re-quantizes what it
// decoded for each viewer, which gives the server's own integers only for a
// viewer whose quantum is the upstream's (rounding twice can land one
// quantum off), so a relay whose viewers all ask for one quantum asks the
// upstream for it.
struct UpstreamNeed {
  bool events = false;
  double min_event_speed = 0.0;
  std::uint32_t max_events = 0;
  double position_quantum = 0.0;
  double velocity_quantum = 0.0;
  bool operator==(const UpstreamNeed&) const = default;
};

// A quantum `held` serves `want` (0: no viewer cares) when it is as fine.
bool covers_quantum(double held, double want) { return want == 0.0 || (held > 0.0 && held <= want); }
double finest(double a, double b) { return a == 0.0 ? b : b == 0.0 ? a : std::min(a, b); }

// Whether the events a stream of `held` carries include every event that a
// viewer whose wishes `want` covers gets from the server. The server keeps
// the events of speed >= t, then the hardest k (ties: the earlier). With
// t_held <= t and k_held >= k (or no cap): the events of speed >= t are the
// head of the server's order (speed down, then time), so the hardest k of
// them are among the hardest k_held of those >= t_held; and since the
// upstream keeps them in their order, the relay's own selection (the same
// code, with the speeds the upstream sends) picks exactly those k.
bool covers(const UpstreamNeed& held, const UpstreamNeed& want) {
  if (!covers_quantum(held.position_quantum, want.position_quantum) ||
      !covers_quantum(held.velocity_quantum, want.velocity_quantum))
    return false;
  if (!want.events) return true;
  return held.events && held.min_event_speed <= want.min_event_speed &&
         (held.max_events == 0 || (want.max_events != 0 && held.max_events >= want.max_events));
}

// The least that covers both.
UpstreamNeed loosest(const UpstreamNeed& a, const UpstreamNeed& b) {
  UpstreamNeed out = !a.events ? b : !b.events ? a
                                            : UpstreamNeed{true, std::min(a.min_event_speed, b.min_event_speed),
                                                        a.max_events == 0 || b.max_events == 0
                                                            ? 0
                                                            : std::max(a.max_events, b.max_events)};
  out.position_quantum = finest(a.position_quantum, b.position_quantum);
  out.velocity_quantum = finest(a.velocity_quantum, b.velocity_quantum);
  return out;
}

// The decoded value back on the quantum grid, in double: a float of
// q * quantum, rounded, gives back q for any world whose coordinates are
// under 2^23 quanta, so the downstream quantization (same quantum) yields the
// upstream's integers exactly.
double on_grid(float value, double quantum) {
  if (!(quantum > 0.0)) return value;
  return static_cast<double>(std::llround(static_cast<double>(value) / quantum)) * quantum;
}

// The upstream has the scenarios: ListScenarios goes there with the
// commands (from viewers too: it is read-only).
RelayOptions listing_upstream(RelayOptions o) {
  o.serve.forward_list_scenarios = true;
  return o;
}

}  // namespace

struct Relay::Impl {
  explicit Impl(RelayOptions o) : options(listing_upstream(std::move(o))), hub(options.serve) {}

  RelayOptions options;
  Hub hub;
  asio::io_context io{std::max(1, options.serve.io_threads)};
  std::shared_ptr<server::Listener> listener = std::make_shared<server::Listener>(io, hub);
  std::uint16_t port = 0;
  std::vector<std::thread> io_threads;
  std::thread upstream_thread;
  std::atomic<bool> stopping{false};
  std::atomic<std::uint64_t> upstream_bytes{0};
  std::mutex wait_mutex;  // for the backoff sleep, cut short by stop()
  std::condition_variable wait_cv;

  std::mutex done_mutex;
  std::condition_variable done_cv;
  bool started = false, stopped = false, done = false;

  // Upstream thread only.
  client::Connection upstream;
  struct Forwarded {
    std::weak_ptr<server::Session> from;
    std::uint64_t request_id = 0;
  };
  std::map<std::uint64_t, Forwarded> forwarded;  // by upstream request id
  std::uint64_t next_request = 1;
  server::SnapshotEncoder encoder;
  server::SnapshotCapture capture;  // the last snapshot (re-sent to a joining viewer while paused)
  bool have_capture = false;
  server::PublicState public_state;
  Clock::time_point last_heard{}, last_stream{};
  UpstreamNeed upstream_need;  // the current connection's events wishes
  UpstreamNeed need;           // what the viewers need, lingering (update_need)
  Clock::time_point tighter_since{}, wishes_checked_at{};

  Status listen();
  void run_upstream();
  bool connect_upstream();
  void lose_upstream(const std::string& why);
  void on_message(v1::ServerMessage& m);
  void on_snapshot(v1::Snapshot& s);
  void publish();
  void forward_commands();
  void heartbeat();
  void serve_while_away();  // commands, joins and heartbeats while the upstream is away
  UpstreamNeed viewers_need() const;  // what the viewers here wish now
  void update_need();  // need: at once when the viewers need more, after kEventsLinger when less
  bool wishes_mismatch();  // need differs from the connection's wishes (checked every kWishesPeriod)
  void sleep_for(double seconds);
};

Status Relay::Impl::listen() {
  const server::ServerOptions& o = options.serve;
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(o.bind, ec);
  if (ec) return {StatusCode::kInvalidArgument, "--bind " + o.bind + ": not an IP address"};
  if (!address.is_loopback() && o.token.empty() && !o.insecure) {
    return {StatusCode::kInvalidArgument,
            "--bind " + o.bind + " is not loopback and no token is set: set --token (or CAROM_RELAY_TOKEN), or pass --insecure"};
  }
  if (const auto listen_ec = listener->listen(tcp::endpoint(address, o.port))) {
    return {StatusCode::kInvalidArgument,
            "cannot listen on " + o.bind + ":" + std::to_string(o.port) + ": " + listen_ec.message()};
  }
  port = listener->port();
  return {};
}

void Relay::Impl::sleep_for(double seconds) {
  std::unique_lock lock(wait_mutex);
  wait_cv.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return stopping.load(); });
}

bool Relay::Impl::connect_upstream() {
  v1::Hello hello;
  hello.set_client_name("carom-relay");
  // Velocities always: a viewer that asks for them must never get zeros
  // while the connection changes. Events, the bulk of a busy world's bytes,
  // only while some viewer here wants them (wishes_mismatch), at the lowest
  // threshold and the largest cap any of them wishes, each with its speed so
  // that the encoder here applies each viewer's own.
  update_need();
  upstream_need = need;
  v1::SnapshotWishes& wishes = *hello.mutable_wishes();
  wishes.set_velocities(true);
  wishes.set_position_quantum(need.position_quantum);
  wishes.set_velocity_quantum(need.velocity_quantum);
  wishes.set_events(need.events);
  if (need.events) {
    wishes.set_min_event_speed(need.min_event_speed);
    wishes.set_max_events(need.max_events);
    wishes.set_event_speeds(true);
  }
  hello.set_role(v1::ROLE_VIEWER);
  bool connected = false;
  if (!options.upstream_token.empty()) {
    v1::Hello control = hello;
    control.set_role(v1::ROLE_CONTROLLER);
    control.set_token(options.upstream_token);
    connected = upstream.connect(options.upstream, control);
    // A token the upstream does not take must not cost the viewers their
    // stream: they get it as a viewer's, and commands are refused upstream.
    if (!connected && (upstream.error().find("UNAUTHENTICATED") != std::string::npos ||
                       upstream.error().find("PERMISSION_DENIED") != std::string::npos)) {
      spdlog::error("upstream {} refused control ({}): relaying as a viewer, commands will be refused there",
                    address_name(options.upstream), upstream.error());
      connected = upstream.connect(options.upstream, hello);
    }
  } else {
    connected = upstream.connect(options.upstream, hello);
  }
  if (!connected) return false;
  // A dead upstream host is noticed within seconds, as the server notices
  // its clients (session.cpp).
  const int fd = upstream.native_handle();
  int on = 1, idle = 2, interval = 1, count = 3;
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
  const v1::Welcome& w = upstream.welcome();
  public_state.params = w.params();
  public_state.tick_hz = w.tick_hz();
  public_state.tick = w.tick();
  public_state.paused = w.paused();
  hub.set_public(public_state);
  last_heard = Clock::now();
  spdlog::info("upstream {} connected ({} {}, tick {}, {})", address_name(options.upstream),
               w.control() ? "controller" : "viewer", w.session_id(), w.tick(), w.server_version());
  return true;
}

void Relay::Impl::lose_upstream(const std::string& why) {
  spdlog::warn("upstream {} lost: {}", address_name(options.upstream), why);
  upstream.close();
  for (auto& [id, f] : forwarded) {
    v1::CommandResult r;
    r.set_request_id(f.request_id);
    r.set_code(v1::FAILED_PRECONDITION);
    r.set_message("the relay lost its upstream before the result came: the command may or may not have been applied");
    r.set_tick(public_state.tick);
    server::send_result(f.from, std::move(r));
  }
  forwarded.clear();
}

void Relay::Impl::run_upstream() {
  double backoff = options.reconnect_min_s;
  last_stream = Clock::now();
  v1::ServerMessage m;
  while (!stopping.load()) {
    if (!upstream.connected()) {
      serve_while_away();
      if (connect_upstream()) {
        backoff = options.reconnect_min_s;
        continue;
      }
      spdlog::warn("upstream {}: {}; retrying in {:.1f} s", address_name(options.upstream), upstream.error(), backoff);
      // Waits in short slices, so the viewers keep hearing from us.
      for (double left = backoff; left > 0 && !stopping.load(); left -= 0.1) {
        sleep_for(std::min(left, 0.1));
        serve_while_away();
      }
      backoff = std::min(2 * backoff, options.reconnect_max_s);
      continue;
    }
    const bool received = upstream.receive(&m, kPollSeconds);
    upstream_bytes.store(upstream.bytes_received(), std::memory_order_relaxed);
    if (received) {
      last_heard = Clock::now();
      on_message(m);
    } else if (!upstream.connected()) {
      lose_upstream(upstream.error());
      continue;
    } else if (Clock::now() - last_heard > kUpstreamSilence) {
      lose_upstream("nothing heard for " + std::to_string(kUpstreamSilence.count()) + " s");
      continue;
    }
    forward_commands();
    // A connection's wishes are fixed by its Hello: a new one, at once, once
    // no command waits for its result on this one.
    if (forwarded.empty() && wishes_mismatch()) {
      spdlog::info("upstream {}: reconnecting with quanta {} m, {} m/s (0: the default), {}",
                   address_name(options.upstream), need.position_quantum, need.velocity_quantum,
                   !need.events ? std::string("without events")
                                : fmt::format("with events of speed >= {} m/s, at most {} a snapshot (0: all)",
                                              need.min_event_speed, need.max_events));
      upstream.close();
      continue;
    }
    // A viewer that joined while the world is paused gets the current tick
    // now, as from the server (the upstream would send it nothing new).
    if (hub.take_resend() && have_capture && capture.paused) publish();
  }
}

void Relay::Impl::serve_while_away() {
  forward_commands();  // each answered: not connected
  // A viewer that joins meanwhile sees the last snapshot there was.
  if (hub.take_resend() && have_capture) publish();
  if (Clock::now() - last_stream >= kHeartbeatPeriod) heartbeat();
}

UpstreamNeed Relay::Impl::viewers_need() const {
  unsigned unkeyed = 0;
  const auto keyed = hub.needed_keyed(&unkeyed);
  UpstreamNeed want;
  // A variant served without a key has no threshold and no cap.
  if ((unkeyed & server::kEventVariants) != 0) want = {true, 0.0, 0};
  for (const auto& [variant, key] : keyed) {
    UpstreamNeed one;
    if ((variant & server::kVariantEvents) != 0) one = {true, key.min_event_speed, key.max_events};
    if ((variant & server::kVariantCompact) != 0) {
      one.position_quantum = key.compact.position_quantum;
      if (key.compact.velocities) one.velocity_quantum = key.compact.velocity_quantum;
    }
    want = loosest(want, one);
  }
  return want;
}

void Relay::Impl::update_need() {
  const auto now = Clock::now();
  const UpstreamNeed want = viewers_need();
  if (!covers(need, want)) {
    need = loosest(need, want);
    tighter_since = {};
  } else if (want == need) {
    tighter_since = {};
  } else if (tighter_since == Clock::time_point{}) {
    tighter_since = now;
  } else if (now - tighter_since >= kEventsLinger) {
    need = want;
    tighter_since = {};
  }
}

bool Relay::Impl::wishes_mismatch() {
  const auto now = Clock::now();
  if (now - wishes_checked_at < kWishesPeriod) return false;
  wishes_checked_at = now;
  update_need();
  return need != upstream_need;
}

void Relay::Impl::on_message(v1::ServerMessage& m) {
  switch (m.kind_case()) {
    case v1::ServerMessage::kSnapshot:
      on_snapshot(*m.mutable_snapshot());
      return;
    case v1::ServerMessage::kHeartbeat:
      public_state.tick = m.heartbeat().tick();
      hub.set_public(public_state);
      hub.broadcast_stream(std::make_shared<const std::string>(proto::encode_frame(m)));
      last_stream = Clock::now();
      return;
    case v1::ServerMessage::kResult: {
      const auto it = forwarded.find(m.result().request_id());
      if (it == forwarded.end()) return;
      m.mutable_result()->set_request_id(it->second.request_id);
      server::send_result(it->second.from, std::move(*m.mutable_result()));
      forwarded.erase(it);
      return;
    }
    case v1::ServerMessage::kGoodbye:
      lose_upstream("goodbye: " + m.goodbye().reason());
      return;
    case v1::ServerMessage::kError:
      lose_upstream(v1::ErrorCode_Name(m.error().code()) + ": " + m.error().message());
      return;
    default:
      return;  // a second Welcome, or a body table (the connection keeps those)
  }
}

void Relay::Impl::on_snapshot(v1::Snapshot& s) {
  server::SnapshotCapture& c = capture;
  c.tick = s.tick();
  c.time = s.time();
  c.server_time_ns = s.server_time_ns();
  c.paused = s.paused();
  c.bounds.walled = s.bounds().walled();
  c.bounds.min = {s.bounds().min().x(), s.bounds().min().y()};
  c.bounds.max = {s.bounds().max().x(), s.bounds().max().y()};
  c.stats = s.stats();
  c.state_hash = s.state_hash();
  c.id.assign(s.id().begin(), s.id().end());
  const std::size_t n = c.id.size();
  const double pq = s.compact().position_quantum(), vq = s.compact().velocity_quantum();
  auto fill = [n](const google::protobuf::RepeatedField<float>& in, double quantum, std::vector<double>* out) {
    out->resize(n);
    for (std::size_t i = 0; i < n; ++i)
      (*out)[i] = i < static_cast<std::size_t>(in.size()) ? on_grid(in[static_cast<int>(i)], quantum) : 0.0;
  };
  fill(s.x(), pq, &c.x);
  fill(s.y(), pq, &c.y);
  fill(s.vx(), vq, &c.vx);
  fill(s.vy(), vq, &c.vy);
  c.radius.assign(s.radius().begin(), s.radius().end());
  c.radius.resize(n);
  c.mass.assign(n, 0.0);  // not on the wire, and not hashed here
  c.events.clear();
  c.events.reserve(static_cast<std::size_t>(s.events_size()));
  for (const v1::CollisionEvent& e : s.events()) {
    server::TickEvent te;
    te.event.a = e.a();
    te.event.b = e.b();
    te.event.point = {e.point().x(), e.point().y()};
    te.event.impulse = {e.impulse().x(), e.impulse().y()};
    te.tick = e.tick();
    // The speed as the server computed it (wishes.event_speeds), which the
    // encoder compares with each viewer's threshold. An upstream that sends
    // none (one that predates them): every threshold lets the event through.
    te.speed = e.has_speed() ? e.speed() : std::numeric_limits<double>::infinity();
    c.events.push_back(te);
  }
  c.events_dropped = s.events_dropped();
  have_capture = true;
  public_state.tick = s.tick();
  public_state.paused = s.paused();
  hub.set_public(public_state);
  (void)hub.take_resend();  // this snapshot answers a join too
  publish();
  // The events were this snapshot's: a re-send of the capture (a viewer
  // joining while paused) carries none, as the server's re-send does not.
  c.events.clear();
  c.events_dropped = 0;
}

void Relay::Impl::publish() {
  capture.keyed = hub.needed_keyed(&capture.needed);
  last_stream = Clock::now();
  if (capture.needed == 0 && capture.keyed.empty()) return;
  // The upstream's Stats, timing figures included, are the snapshot's: no
  // window of our own to add.
  static const v1::Stats kNoTiming;
  server::SnapshotFrames frames;
  encoder.encode(capture, kNoTiming, &frames);
  hub.broadcast(frames);
}

void Relay::Impl::forward_commands() {
  std::vector<server::PendingCommand> commands;
  hub.wait_commands(Clock::now(), &commands);
  for (server::PendingCommand& p : commands) {
    if (!upstream.connected()) {
      v1::CommandResult r;
      r.set_request_id(p.command.request_id());
      r.set_code(v1::FAILED_PRECONDITION);
      r.set_message("the relay's upstream " + address_name(options.upstream) + " is not connected (reconnecting): try again");
      r.set_tick(public_state.tick);
      server::send_result(p.from, std::move(r));
      continue;
    }
    const std::uint64_t id = next_request++;
    forwarded[id] = Forwarded{p.from, p.command.request_id()};
    v1::ClientMessage message;
    *message.mutable_command() = std::move(p.command);
    message.mutable_command()->set_request_id(id);
    if (!upstream.send(message)) {
      lose_upstream(upstream.error());  // answers this one too
      return;
    }
  }
}

void Relay::Impl::heartbeat() {
  v1::ServerMessage m;
  m.mutable_heartbeat()->set_tick(public_state.tick);
  m.mutable_heartbeat()->set_server_time_ns(proto::monotonic_ns());
  hub.broadcast_stream(std::make_shared<const std::string>(proto::encode_frame(m)));
  last_stream = Clock::now();
}

Relay::Relay(RelayOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Relay::~Relay() { stop("relay shutting down"); }

Status Relay::start() {
  Impl& r = *impl_;
  if (Status st = r.listen(); !st.ok()) return st;
  r.listener->run();
  for (int i = 0; i < std::max(1, r.options.serve.io_threads); ++i) r.io_threads.emplace_back([&r] { r.io.run(); });
  r.upstream_thread = std::thread([&r] { r.run_upstream(); });
  std::lock_guard lock(r.done_mutex);
  r.started = true;
  return {};
}

std::uint16_t Relay::port() const { return impl_->port; }

std::uint64_t Relay::upstream_bytes() const { return impl_->upstream_bytes.load(std::memory_order_relaxed); }

void Relay::stop(const std::string& reason) {
  Impl& r = *impl_;
  {
    std::unique_lock lock(r.done_mutex);
    if (!r.started || r.done) return;
    if (r.stopped) {
      r.done_cv.wait(lock, [&] { return r.done; });
      return;
    }
    r.stopped = true;
  }
  {
    std::lock_guard lock(r.wait_mutex);
    r.stopping.store(true);
  }
  r.wait_cv.notify_all();
  r.upstream_thread.join();
  r.upstream.close();
  r.listener->close();
  r.hub.goodbye_all(reason);
  (void)r.hub.wait_until_empty(std::chrono::seconds(1));
  r.io.stop();
  for (auto& t : r.io_threads) t.join();
  r.io_threads.clear();
  {
    std::lock_guard lock(r.done_mutex);
    r.done = true;
  }
  r.done_cv.notify_all();
}

}  // namespace carom::relay
