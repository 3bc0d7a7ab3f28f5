// carom-bench --net. The scene is spawned over the protocol and, with
// --settle, stepped (paused, as fast as the server can) before anything is
// measured. Phase 1: the world ticks with only a controller connected; phase
// 2: the same with N viewers, each on its own thread, every snapshot's latency
// measured as (arrival on CLOCK_MONOTONIC) - server_time_ns (same machine,
// same clock). A viewer is carom-view's Connection (with --websocket, the
// server's /ws as the web page opens it, decoded by Connection's own
// StreamDecoder: one viewer loop over a ViewerLink): it parses every snapshot
// in full, decodes the compact stream (unless --plain) and, with body tables,
// fills in the ids and radii from the table. The server reports its own
// tick-time percentiles (tick work and the step alone) and late ticks through
// GetStats; the bytes are counted as received, over phase 2's window only.
// With --relays, one more viewer watches the server directly, with the
// relays' own wishes (so the server encodes nothing more for it), as the
// reference for the latency a relay adds: each relayed snapshot's arrival
// minus that viewer's arrival of the same tick.

#include "bench/net.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/websocket.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "carom/client/connection.hpp"
#include "convert.hpp"
#include "relay.hpp"
#include "server.hpp"

namespace carom::bench {

namespace {

using Clock = std::chrono::steady_clock;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;

// A viewer's way to the server: what the viewer loop needs of it.
class ViewerLink {
 public:
  virtual ~ViewerLink() = default;
  // Connects and says `hello`; false (error()) unless a Welcome came back.
  virtual bool connect(const client::Address& address, v1::Hello hello) = 0;
  // The next message, decoded as Connection::receive() decodes it; false on
  // a timeout (still connected()) or when the link is gone.
  virtual bool receive(v1::ServerMessage* out, double timeout_s) = 0;
  virtual bool connected() const = 0;
  // Everything the server sent on this link, as on the wire.
  virtual std::uint64_t bytes_received() const = 0;
  virtual const std::string& error() const = 0;
};

// carom-view's own TCP connection.
class TcpLink final : public ViewerLink {
 public:
  TcpLink(bool body_tables, bool compact) {
    connection_.set_body_tables(body_tables);
    connection_.set_compact(compact);
  }
  bool connect(const client::Address& address, v1::Hello hello) override {
    return connection_.connect(address, std::move(hello));
  }
  bool receive(v1::ServerMessage* out, double timeout_s) override { return connection_.receive(out, timeout_s); }
  bool connected() const override { return connection_.connected(); }
  std::uint64_t bytes_received() const override { return connection_.bytes_received(); }
  const std::string& error() const override { return connection_.error(); }

 private:
  client::Connection connection_;
};

// A WebSocket to the server's /ws, as the web page opens it (its Origin is
// the server's own), one protobuf message per binary message. Every
// operation is asynchronous on a private io_context run up to the caller's
// deadline: a read that times out stays pending for the next receive(), so
// no message is lost and Beast's own buffering needs no poll().
class WebSocketLink final : public ViewerLink {
 public:
  WebSocketLink(bool body_tables, bool compact) : body_tables_(body_tables), compact_(compact) {}

  bool connect(const client::Address& address, v1::Hello hello) override {
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    const std::string host = address.host + ":" + std::to_string(address.port);
    boost::system::error_code ec;
    const asio::ip::tcp::endpoint endpoint(asio::ip::make_address(address.host, ec), address.port);
    if (ec) return fail("cannot read address " + address.host + ": " + ec.message());
    bool done = false;
    ws_.next_layer().async_connect(endpoint, [&](boost::system::error_code e) { ec = e; done = true; });
    if (!run(done, deadline) || ec) return fail("cannot connect to " + host + ": " + (ec ? ec.message() : "timed out"));
    ws_.next_layer().set_option(asio::ip::tcp::no_delay(true), ec);
    ws_.set_option(websocket::stream_base::decorator(
        [origin = "http://" + host](websocket::request_type& request) { request.set(beast::http::field::origin, origin); }));
    ws_.read_message_max(proto::kDefaultMaxServerFrame);
    ws_.binary(true);
    done = false;
    ws_.async_handshake(host, "/ws", [&](boost::system::error_code e) { ec = e; done = true; });
    if (!run(done, deadline) || ec)
      return fail("WebSocket handshake with " + host + "/ws: " + (ec ? ec.message() : "timed out"));
    client::add_stream_wishes(&hello, body_tables_, compact_);
    v1::ClientMessage message;
    *message.mutable_hello() = std::move(hello);
    const std::string bytes = message.SerializeAsString();
    done = false;
    ws_.async_write(asio::buffer(bytes), [&](boost::system::error_code e, std::size_t) { ec = e; done = true; });
    if (!run(done, deadline) || ec) return fail("sending Hello: " + (ec ? ec.message() : std::string("timed out")));
    v1::ServerMessage reply;
    if (!receive(&reply, std::chrono::duration<double>(deadline - Clock::now()).count())) return false;
    if (reply.has_error())
      return fail("server refused: " + client::code_name(reply.error().code()) + ": " + reply.error().message());
    if (!reply.has_welcome()) return fail("server did not answer with a Welcome");
    return true;
  }

  bool receive(v1::ServerMessage* out, double timeout_s) override {
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
    for (;;) {
      if (!reading_) {
        reading_ = true;
        read_done_ = false;
        ws_.async_read(buffer_, [this](boost::system::error_code e, std::size_t) { read_ec_ = e; read_done_ = true; });
      }
      if (!run(read_done_, deadline)) return fail("timed out waiting for the server", false);
      reading_ = false;
      if (read_ec_) return fail("receive failed: " + read_ec_.message());
      const std::size_t n = buffer_.size();
      // The server sends each message as one unmasked frame: a 2-byte
      // header, plus 2 or 8 bytes of extended length.
      bytes_ += n + (n < 126 ? 2 : n <= 0xffff ? 4 : 10);
      const auto data = buffer_.cdata();
      const bool parsed = out->ParseFromArray(data.data(), static_cast<int>(data.size()));
      buffer_.consume(n);
      if (!parsed) return fail("unreadable message from the server");
      std::string why;
      switch (decoder_.take(out, &why)) {
        case client::StreamDecoder::Result::kMessage:
          return true;
        case client::StreamDecoder::Result::kKept:
          continue;
        case client::StreamDecoder::Result::kError:
          return fail(std::move(why));
      }
    }
  }

  bool connected() const override { return ws_.next_layer().is_open(); }
  std::uint64_t bytes_received() const override { return bytes_; }
  const std::string& error() const override { return error_; }

 private:
  // Runs the io_context until `done` or the deadline; whether done.
  bool run(const bool& done, Clock::time_point deadline) {
    while (!done && Clock::now() < deadline) {
      io_.restart();
      io_.run_one_until(deadline);
    }
    return done;
  }
  bool fail(std::string why, bool close = true) {
    error_ = std::move(why);
    if (close) {
      boost::system::error_code ec;
      ws_.next_layer().close(ec);
    }
    return false;
  }

  // Declared before the stream, so that a read still pending when the link
  // goes is dropped with the io_context, after its socket and buffer.
  asio::io_context io_;
  beast::flat_buffer buffer_;
  websocket::stream<asio::ip::tcp::socket> ws_{io_};
  client::StreamDecoder decoder_;
  bool body_tables_, compact_;
  bool reading_ = false, read_done_ = false;
  boost::system::error_code read_ec_;
  std::uint64_t bytes_ = 0;
  std::string error_;
};

std::unique_ptr<ViewerLink> make_link(const NetBenchOptions& o) {
  if (o.websocket) return std::make_unique<WebSocketLink>(o.body_tables, o.compact);
  return std::make_unique<TcpLink>(o.body_tables, o.compact);
}

double percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
}

bool call(client::Connection& c, v1::Command command, v1::CommandResult* r) {
  if (!c.call(std::move(command), r)) {
    std::cerr << "carom-bench --net: " << c.error() << "\n";
    return false;
  }
  if (r->code() != v1::OK) {
    std::cerr << "carom-bench --net: " << client::code_name(r->code()) << ": " << r->message() << "\n";
    return false;
  }
  return true;
}

bool load_scene(client::Connection& ctl, const Scene& scene, double tick_hz) {
  v1::CommandResult r;
  v1::Command params;
  // Every parameter, through the one mapping the server itself answers
  // get_params with (built by hand, it sent the continuous solver as
  // discrete and dropped dt, density and mutual gravity).
  server::params_to_proto(scene.params, tick_hz, params.mutable_set_params()->mutable_params());
  if (!call(ctl, params, &r)) return false;
  // Spawn in chunks that stay under the 1 MiB client frame limit.
  for (std::size_t at = 0; at < scene.bodies.size(); at += 8192) {
    v1::Command spawn;
    for (std::size_t i = at; i < std::min(scene.bodies.size(), at + 8192); ++i) {
      const BodyDesc& d = scene.bodies[i];
      v1::Body& b = *spawn.mutable_spawn()->add_bodies();
      b.mutable_position()->set_x(d.position.x);
      b.mutable_position()->set_y(d.position.y);
      b.mutable_velocity()->set_x(d.velocity.x);
      b.mutable_velocity()->set_y(d.velocity.y);
      b.set_radius(d.radius);
      b.set_mass(d.mass);
    }
    if (!call(ctl, spawn, &r)) return false;
  }
  return true;
}

// Steps the world `steps` ticks while paused (no viewers yet: nothing is
// sent), so a pile comes to rest before it is measured.
bool settle(client::Connection& ctl, std::uint64_t steps) {
  v1::CommandResult r;
  v1::Command pause;
  pause.mutable_pause();
  if (!call(ctl, pause, &r)) return false;
  for (std::uint64_t done = 0; done < steps;) {
    const std::uint64_t chunk = std::min<std::uint64_t>(steps - done, 100);  // each call well under its timeout
    v1::Command step;
    step.mutable_step()->set_count(chunk);
    if (!call(ctl, step, &r)) return false;
    done += chunk;
  }
  v1::Command resume;
  resume.mutable_resume();
  return call(ctl, resume, &r);
}

// A hash of what a viewer decoded of a snapshot, its ids and positions, 8
// bytes at a time (256 viewers hash 60 MB/s of snapshots at 10 000 bodies
// and 30 Hz; FNV's byte loop took the 2 cores' time from the viewers).
std::uint64_t decoded_hash(const v1::Snapshot& s) {
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const void* data, std::size_t size) {
    const auto* p = static_cast<const unsigned char*>(data);
    std::size_t k = 0;
    for (; k + 8 <= size; k += 8) {
      std::uint64_t w;
      std::memcpy(&w, p + k, 8);
      h = (h ^ w) * 0x9E3779B97F4A7C15ull;
      h ^= h >> 29;
    }
    for (; k < size; ++k) h = (h ^ p[k]) * 1099511628211ull;
  };
  mix(s.id().data(), sizeof(std::uint32_t) * static_cast<std::size_t>(s.id_size()));
  mix(s.x().data(), sizeof(float) * static_cast<std::size_t>(s.x_size()));
  mix(s.y().data(), sizeof(float) * static_cast<std::size_t>(s.y_size()));
  return h;
}

// What one receiver has got so far; written by its thread, sampled by the
// main thread at the edges of the measuring window.
struct Received {
  std::atomic<std::uint64_t> bytes{0};
  std::atomic<std::uint64_t> snapshots{0};
  std::atomic<std::uint64_t> bodies{0};  ///< summed over the snapshots
  std::atomic<std::uint64_t> events{0};
};

struct Counts {
  std::uint64_t bytes = 0, snapshots = 0, bodies = 0, events = 0;
};

Counts sample(const Received& r) {
  return {r.bytes.load(), r.snapshots.load(), r.bodies.load(), r.events.load()};
}

struct Phase {
  v1::Stats stats;
  std::vector<double> latency_ms;
  std::vector<std::pair<std::uint64_t, std::int64_t>> arrivals;  ///< with --relays: (tick, arrival ns), every viewer
  std::vector<std::pair<std::uint64_t, std::uint64_t>> seen;  ///< (tick, hash of the decoded ids and positions), every viewer
  std::vector<Counts> begin, end;  ///< per viewer, at the window's edges
};

// A window of `seconds`: tick times from the server, and each viewer's
// counts at its edges.
bool measure(client::Connection& ctl, double seconds, const std::vector<Received>& viewers, Phase* out) {
  v1::CommandResult r;
  v1::Command reset;
  reset.mutable_get_stats()->set_reset_timing(true);
  if (!call(ctl, reset, &r)) return false;
  for (const Received& v : viewers) out->begin.push_back(sample(v));
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  for (const Received& v : viewers) out->end.push_back(sample(v));
  v1::Command get;
  get.mutable_get_stats();
  if (!call(ctl, get, &r)) return false;
  out->stats = r.stats();
  return true;
}

}  // namespace

int run_net_bench(const NetBenchOptions& o) {
  Scene scene;
  if (Status s = build_scene(o.scene, &scene); !s.ok()) {
    std::cerr << "carom-bench: " << s.message() << "\n";
    return 2;
  }
  // The server's connection log would drown the figures: warnings only, to stderr.
  spdlog::set_default_logger(spdlog::stderr_color_mt("carom-server"));
  spdlog::set_level(spdlog::level::warn);
  server::ServerOptions so;
  so.port = 0;
  so.tick_hz = o.tick_hz;
  so.threads = o.threads;
  so.fixed_threads = o.fixed_threads;
  so.max_clients = static_cast<std::uint32_t>(o.viewers + 8);
  if (o.websocket) so.http_port = 0;
  server::Server server(so);
  if (Status s = server.start(); !s.ok()) {
    std::cerr << "carom-bench: " << s.message() << "\n";
    return 2;
  }
  const client::Address address{"127.0.0.1", server.port()};
  // --relays: the server serves the relays only; viewer i watches relay i % K.
  std::vector<std::unique_ptr<relay::Relay>> relays;
  std::vector<client::Address> viewer_addresses{address};
  if (o.websocket) viewer_addresses = {{"127.0.0.1", server.http_port()}};
  for (int k = 0; k < o.relays; ++k) {
    relay::RelayOptions ro;
    ro.serve.port = 0;
    ro.serve.max_clients = static_cast<std::uint32_t>(o.viewers + 8);
    ro.upstream = address;
    relays.push_back(std::make_unique<relay::Relay>(ro));
    if (Status s = relays.back()->start(); !s.ok()) {
      std::cerr << "carom-bench: relay: " << s.message() << "\n";
      return 2;
    }
    if (k == 0) viewer_addresses.clear();
    viewer_addresses.push_back({"127.0.0.1", relays.back()->port()});
  }
  client::Connection ctl;
  v1::Hello hello;
  hello.set_role(v1::ROLE_CONTROLLER);
  hello.set_client_name("carom-bench");
  if (!ctl.connect(address, hello)) {
    std::cerr << "carom-bench: " << ctl.error() << "\n";
    return 2;
  }
  if (!load_scene(ctl, scene, o.tick_hz)) return 2;
  if (o.settle > 0 && !settle(ctl, o.settle)) return 2;
  std::this_thread::sleep_for(std::chrono::seconds(1));  // let the pair lists settle

  Phase alone, watched;
  if (!measure(ctl, o.seconds, {}, &alone)) return 2;

  std::vector<Received> received(static_cast<std::size_t>(o.viewers));
  std::atomic<bool> stop{false};
  std::mutex mutex;
  std::vector<std::thread> threads;
  std::atomic<int> ready{0};
  std::atomic<int> failed{0};
  for (int i = 0; i < o.viewers; ++i) {
    threads.emplace_back([&, i] {
      const std::unique_ptr<ViewerLink> link = make_link(o);
      ViewerLink& v = *link;
      v1::Hello h;
      h.set_role(v1::ROLE_VIEWER);
      h.set_client_name("bench-viewer-" + std::to_string(i));
      if (o.velocities) h.mutable_wishes()->set_velocities(true);
      if (o.events) h.mutable_wishes()->set_events(true);
      Received& got = received[static_cast<std::size_t>(i)];
      if (!v.connect(viewer_addresses[static_cast<std::size_t>(i) % viewer_addresses.size()], h)) {
        ++failed;
        ++ready;
        return;
      }
      ++ready;
      std::vector<double> lat;
      lat.reserve(static_cast<std::size_t>(o.seconds * o.tick_hz * 1.2));
      std::vector<std::pair<std::uint64_t, std::int64_t>> arrivals;
      if (o.relays > 0) arrivals.reserve(lat.capacity());
      std::vector<std::pair<std::uint64_t, std::uint64_t>> seen;
      seen.reserve(lat.capacity());
      v1::ServerMessage m;
      while (!stop.load(std::memory_order_relaxed)) {
        if (!v.receive(&m, 0.5)) {
          if (!v.connected()) {
            std::cerr << "carom-bench --net: viewer " << i << ": " << v.error() << "\n";
            ++failed;
            break;
          }
          continue;
        }
        if (!m.has_snapshot()) continue;
        const std::int64_t now = client::monotonic_ns();
        lat.push_back(static_cast<double>(now - m.snapshot().server_time_ns()) * 1e-6);
        if (o.relays > 0) arrivals.emplace_back(m.snapshot().tick(), now);
        // Every fourth tick: enough to catch a viewer that decodes another world.
        if (m.snapshot().tick() % 4 == 0) seen.emplace_back(m.snapshot().tick(), decoded_hash(m.snapshot()));
        // Bytes first: a window edge between the two stores counts a
        // snapshot's bytes without it, never the other way round.
        got.bytes.store(v.bytes_received());
        got.bodies.fetch_add(static_cast<std::uint64_t>(m.snapshot().id_size()));
        got.events.fetch_add(static_cast<std::uint64_t>(m.snapshot().events_size()));
        got.snapshots.fetch_add(1);
      }
      std::lock_guard lock(mutex);
      watched.latency_ms.insert(watched.latency_ms.end(), lat.begin(), lat.end());
      watched.arrivals.insert(watched.arrivals.end(), arrivals.begin(), arrivals.end());
      watched.seen.insert(watched.seen.end(), seen.begin(), seen.end());
    });
  }
  // The reference for the latency a relay adds: a direct viewer of the
  // server with the wishes a relay sends (velocities; events with their
  // speeds, no threshold, when the viewers want events), so that it shares
  // the relays' frames. Its bytes are not the viewers' and not counted.
  std::unordered_map<std::uint64_t, std::int64_t> direct_arrival;
  std::atomic<bool> reference_failed{false};
  std::thread reference;
  if (o.relays > 0) {
    reference = std::thread([&] {
      client::Connection v;
      v1::Hello h;
      h.set_role(v1::ROLE_VIEWER);
      h.set_client_name("bench-reference");
      h.mutable_wishes()->set_velocities(true);
      if (o.events) {
        h.mutable_wishes()->set_events(true);
        h.mutable_wishes()->set_event_speeds(true);
      }
      if (!v.connect(address, h)) {
        std::cerr << "carom-bench --net: reference viewer: " << v.error() << "\n";
        reference_failed = true;
        return;
      }
      v1::ServerMessage m;
      while (!stop.load(std::memory_order_relaxed)) {
        if (!v.receive(&m, 0.5)) {
          if (!v.connected()) {
            std::cerr << "carom-bench --net: reference viewer: " << v.error() << "\n";
            reference_failed = true;
            return;
          }
          continue;
        }
        if (m.has_snapshot()) direct_arrival.emplace(m.snapshot().tick(), client::monotonic_ns());
      }
    });
  }
  while (ready.load() < o.viewers) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  {
    std::lock_guard lock(mutex);  // nothing yet: the viewers merge at the end
  }
  const std::uint64_t ctl_bytes0 = ctl.bytes_received();
  auto relays_received = [&relays] {
    std::uint64_t n = 0;
    for (const auto& r : relays) n += r->upstream_bytes();
    return n;
  };
  const std::uint64_t relay_bytes0 = relays_received();
  const bool ok = measure(ctl, o.seconds, received, &watched);
  const std::uint64_t ctl_bytes = ctl.bytes_received() - ctl_bytes0;
  const std::uint64_t relay_bytes = relays_received() - relay_bytes0;
  stop = true;
  for (auto& t : threads) t.join();
  if (reference.joinable()) reference.join();
  relays.clear();
  server.stop("benchmark over");
  if (!ok) return 2;

  const double p99_alone = alone.stats.tick_p99_seconds() * 1e3, p99_watched = watched.stats.tick_p99_seconds() * 1e3;
  std::vector<double>& lat = watched.latency_ms;
  const double lat_p50 = percentile(lat, 0.5), lat_p99 = percentile(lat, 0.99), lat_max = lat.empty() ? 0 : lat.back();
  // The window's counts: totals, and bytes per body per snapshot averaged
  // over the viewers that got any.
  Counts total;
  double per_body_sum = 0.0;
  int per_body_viewers = 0;
  for (std::size_t i = 0; i < watched.end.size(); ++i) {
    const Counts& a = watched.begin[i];
    const Counts& b = watched.end[i];
    total.bytes += b.bytes - a.bytes;
    total.snapshots += b.snapshots - a.snapshots;
    total.events += b.events - a.events;
    if (b.bodies > a.bodies) {
      per_body_sum += static_cast<double>(b.bytes - a.bytes) / static_cast<double>(b.bodies - a.bodies);
      ++per_body_viewers;
    }
  }
  // Every byte the server sent in the window went to a connection of ours
  // (loopback loses none): the viewers' (with --relays, the relays') and the
  // controller's receipts.
  const std::uint64_t server_sent = (o.relays > 0 ? relay_bytes : total.bytes) + ctl_bytes;
  const bool compact = o.compact && o.body_tables;
  // One world per tick: every viewer that got a tick decoded the same ids
  // and positions (through relays too).
  std::sort(watched.seen.begin(), watched.seen.end());
  std::uint64_t ticks_checked = 0, ticks_differing = 0;
  for (std::size_t a = 0; a < watched.seen.size();) {
    std::size_t b = a;
    bool same = true;
    while (b < watched.seen.size() && watched.seen[b].first == watched.seen[a].first) {
      same = same && watched.seen[b].second == watched.seen[a].second;
      ++b;
    }
    ++ticks_checked;
    if (!same) ++ticks_differing;
    a = b;
  }

  nlohmann::ordered_json j;
  j["scene"] = o.scene.name;
  j["bodies"] = scene.bodies.size();
  j["settle_steps"] = o.settle;
  j["viewers"] = o.viewers;
  j["viewers_failed"] = failed.load();
  j["relays"] = o.relays;
  j["transport"] = o.websocket ? "websocket" : "tcp";
  j["tick_hz"] = o.tick_hz;
  j["body_tables"] = o.body_tables;
  j["compact"] = compact;
  j["velocities"] = o.velocities;
  j["events"] = o.events;
  j["seconds_per_phase"] = o.seconds;
  j["tick_p50_ms_no_viewers"] = alone.stats.tick_p50_seconds() * 1e3;
  j["tick_p99_ms_no_viewers"] = p99_alone;
  j["tick_p50_ms_viewers"] = watched.stats.tick_p50_seconds() * 1e3;
  j["tick_p99_ms_viewers"] = p99_watched;
  j["tick_p99_ratio"] = p99_alone > 0 ? p99_watched / p99_alone : 0.0;
  j["step_p50_ms_no_viewers"] = alone.stats.step_p50_seconds() * 1e3;
  j["step_p99_ms_no_viewers"] = alone.stats.step_p99_seconds() * 1e3;
  j["step_p50_ms_viewers"] = watched.stats.step_p50_seconds() * 1e3;
  j["step_p99_ms_viewers"] = watched.stats.step_p99_seconds() * 1e3;
  j["late_ticks_no_viewers"] = alone.stats.late_ticks();
  j["late_ticks_viewers"] = watched.stats.late_ticks();
  j["ticks_measured"] = watched.stats.ticks_measured();
  j["snapshots_received"] = total.snapshots;
  j["snapshots_expected"] = static_cast<double>(watched.stats.ticks_measured()) * o.viewers;
  j["snapshots_skipped"] = watched.stats.snapshots_skipped();
  j["ticks_hash_checked"] = ticks_checked;
  j["ticks_hash_differing"] = ticks_differing;
  j["latency_p50_ms"] = lat_p50;
  j["latency_p99_ms"] = lat_p99;
  j["latency_max_ms"] = lat_max;
  j["received_mb_per_s"] = static_cast<double>(total.bytes) / 1e6 / o.seconds;
  j["server_sent_mb_per_s"] = static_cast<double>(server_sent) / 1e6 / o.seconds;
  j["bytes_per_snapshot"] =
      total.snapshots > 0 ? static_cast<double>(total.bytes) / static_cast<double>(total.snapshots) : 0.0;
  j["bytes_per_body"] = per_body_viewers > 0 ? per_body_sum / per_body_viewers : 0.0;
  if (o.relays > 0) {
    // What one relay (one hop) adds: each relayed snapshot's arrival minus
    // the direct reference viewer's arrival of the same tick.
    std::vector<double> added;
    added.reserve(watched.arrivals.size());
    for (const auto& [tick, at] : watched.arrivals) {
      const auto it = direct_arrival.find(tick);
      if (it != direct_arrival.end()) added.push_back(static_cast<double>(at - it->second) * 1e-6);
    }
    j["relay_added_latency_p50_ms"] = percentile(added, 0.5);
    j["relay_added_latency_p99_ms"] = percentile(added, 0.99);
    j["relay_added_latency_max_ms"] = added.empty() ? 0.0 : added.back();
    j["relay_added_latency_samples"] = added.size();
  }
  if (o.events)
    j["events_per_snapshot"] =
        total.snapshots > 0 ? static_cast<double>(total.events) / static_cast<double>(total.snapshots) : 0.0;
  if (o.json) {
    std::cout << j.dump() << "\n";
  } else {
    std::cout << j.dump(2) << "\n";
  }
  return failed.load() == 0 && !reference_failed.load() ? 0 : 1;
}

}  // namespace carom::bench
