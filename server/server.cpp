// Server: wires the listener, the sessions, the network threads, the one
// simulation thread and the snapshot thread together. The simulation thread
// owns the SimState; it applies queued commands at tick boundaries in arrival
// order, steps, and copies what the snapshots need into a capture that the
// snapshot thread (publisher.cpp) hashes, encodes and hands to the sessions.

#include "server.hpp"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <spdlog/spdlog.h>
#include <thread>
#include <vector>

#include "carom/proto/framing.hpp"
#include "carom/proto/text.hpp"
#include "hub.hpp"
#include "listener.hpp"
#include "publisher.hpp"
#include "session.hpp"
#include "sim_state.hpp"
#include "snapshot.hpp"
#include "tick_times.hpp"

namespace carom::server {

namespace asio = boost::asio;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

struct Server::Impl {
  explicit Impl(ServerOptions o) : options(std::move(o)), hub(options), publisher(hub) {}

  ServerOptions options;
  Hub hub;
  SnapshotPublisher publisher;
  asio::io_context io{std::max(1, options.io_threads)};
  std::shared_ptr<Listener> listener = std::make_shared<Listener>(io, hub);
  std::uint16_t port = 0;
  std::unique_ptr<SimState> sim;
  std::vector<std::thread> io_threads;
  std::thread sim_thread;
  std::atomic<bool> stopping{false};

  std::mutex done_mutex;
  std::condition_variable done_cv;
  bool started = false, done = false;

  // Simulation-thread state.
  TickTimes tick_times;
  std::vector<TickEvent> events;  // since the last snapshot
  std::uint64_t events_dropped = 0;
  std::uint64_t snapshot_every = 1;
  std::weak_ptr<Session> step_waiter;  // who sent the Step in progress

  Status load_initial();
  Status load_state_file();
  SimOptions sim_options() const;
  void run_sim();
  void apply_commands(std::vector<PendingCommand>& commands);
  void answer(const std::weak_ptr<Session>& to, v1::CommandResult result);
  void publish_snapshot(std::optional<v1::CommandResult> after = std::nullopt);
  void publish_public();
  void fill_stats(v1::Stats* out);
  void update_rate();
  Status save_state(const std::string& path);
};

SimOptions Server::Impl::sim_options() const {
  SimOptions so;
  so.config.max_bodies = options.max_bodies;
  so.config.threads = options.threads;
  so.tick_hz = options.tick_hz;
  so.scenario_dir = options.scenario_dir;
  return so;
}

Status Server::Impl::load_state_file() {
  std::string bytes;
  v1::SavedWorld saved;
  if (!proto::read_file(options.state, &bytes)) return {StatusCode::kInvalidArgument, options.state + ": cannot read"};
  if (!saved.ParseFromString(bytes)) {
    return {StatusCode::kInvalidArgument, options.state + ": not a carom SavedWorld file"};
  }
  if (Status s = sim->load_saved(saved); !s.ok()) return {s.code(), options.state + ": " + s.message()};
  spdlog::info("loaded {} ({} bodies, state hash {:016x})", options.state, sim->world().size(),
               sim->world().state_hash());
  return {};
}

Status Server::Impl::load_initial() {
  sim = std::make_unique<SimState>(sim_options());
  if (!options.state.empty()) {
    if (const int n = proto::remove_stale_temporaries(options.state); n > 0)
      spdlog::info("removed {} temporary file(s) of {} left by an interrupted save", n, options.state);
  }
  if (!options.state.empty() && std::filesystem::exists(options.state)) {
    Status st = load_state_file();
    if (st.ok()) return {};
    if (!options.state_on_error_empty) return st;
    // The operator chose to start anyway: the file is kept, renamed aside,
    // never overwritten by the next save.
    const std::string aside =
        options.state + ".failed-" +
        std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count());
    std::error_code ec;
    std::filesystem::rename(options.state, aside, ec);
    if (ec) return {StatusCode::kInvalidArgument, st.message() + "; and it cannot be renamed aside: " + ec.message()};
    spdlog::error("{}; kept as {}; starting without it (--state-on-error empty)", st.message(), aside);
    sim = std::make_unique<SimState>(sim_options());
  }
  if (!options.scenario.empty()) {
    v1::Scenario scenario;
    proto::TextLocations where;
    std::string error;
    if (!proto::parse_text_file(options.scenario, &scenario, &error, &where)) {
      return {StatusCode::kInvalidArgument, error};
    }
    if (Status s = sim->load_scenario(scenario, options.scenario, &where); !s.ok()) return s;
  }
  return {};
}

void Server::Impl::answer(const std::weak_ptr<Session>& to, v1::CommandResult result) {
  send_result(to, std::move(result));
}

void Server::Impl::fill_stats(v1::Stats* out) {
  sim->fill_stats(out);
  tick_times.fill(out);
  out->set_clients(static_cast<std::uint32_t>(hub.clients()));
  out->set_snapshots_skipped(hub.snapshots_skipped.load());
}

void Server::Impl::update_rate() {
  snapshot_every = options.snapshot_hz > 0
                       ? std::max<std::uint64_t>(1, static_cast<std::uint64_t>(sim->tick_hz() / options.snapshot_hz + 0.5))
                       : 1;
}

void Server::Impl::apply_commands(std::vector<PendingCommand>& commands) {
  // The commands of one tick boundary share the first snapshot that shows
  // them: the next tick if the world runs after the last of them, else the
  // current tick re-sent. So a spawn followed by a pause in one write names
  // the tick that comes, not one that would only come after a resume.
  std::vector<std::pair<std::weak_ptr<Session>, v1::CommandResult>> answers;
  for (PendingCommand& p : commands) {
    v1::CommandResult result;
    const bool answered = sim->apply(p.command, &result);
    if (p.command.has_get_stats() && result.code() == v1::OK) {
      if (p.command.get_stats().reset_timing()) tick_times.reset();
      fill_stats(result.mutable_stats());
    }
    if (answered) {
      answers.emplace_back(p.from, std::move(result));
    } else {
      step_waiter = p.from;
    }
  }
  for (auto& [from, result] : answers) {
    result.set_tick(sim->shown_tick());
    answer(from, std::move(result));
  }
}

void Server::Impl::publish_snapshot(std::optional<v1::CommandResult> after) {
  const unsigned needed = hub.needed_variants();
  if (needed == 0) {
    events.clear();
    events_dropped = 0;
    if (after) answer(step_waiter, std::move(*after));
    return;
  }
  // Only copies here: the hash, the encoding and the hand-off to the sessions
  // are the snapshot thread's.
  std::unique_ptr<SnapshotCapture> c = publisher.buffer();
  capture_snapshot(*sim, needed, c.get());
  c->server_time_ns = monotonic_ns();
  sim->fill_stats(&c->stats);
  c->stats.set_clients(static_cast<std::uint32_t>(hub.clients()));
  c->stats.set_snapshots_skipped(hub.snapshots_skipped.load());
  c->events.swap(events);
  events.clear();
  c->events_dropped = events_dropped;
  events_dropped = 0;
  tick_times.take_fresh(&c->timing);
  if (after) c->after.emplace_back(step_waiter, std::move(*after));
  publisher.publish(std::move(c));
}

void Server::Impl::publish_public() {
  PublicState p;
  sim->fill_params(&p.params);
  p.tick_hz = sim->tick_hz();
  p.tick = sim->tick();
  p.paused = sim->paused();
  hub.set_public(std::move(p));
}

void Server::Impl::run_sim() {
  constexpr std::size_t kMaxEventsKept = SnapshotPublisher::kMaxEvents;
  std::vector<PendingCommand> commands;
  double tick_hz = sim->tick_hz();
  update_rate();
  auto next = Clock::now();  // when the next tick is due
  auto last_stream = Clock::now();
  auto last_save = Clock::now();
  bool was_running = false;
  publish_public();
  while (!stopping.load()) {
    // Sleep until the next tick is due (or, while paused, up to a heartbeat),
    // waking early for commands. A Step command runs its ticks back to back.
    const bool fast = sim->paused() && sim->should_step();
    const Clock::time_point deadline =
        fast ? Clock::now() : (sim->should_step() ? next : last_stream + std::chrono::seconds(1));
    hub.wait_commands(deadline, &commands);
    if (stopping.load()) break;
    const auto t0 = Clock::now();
    // 1. Commands, at the tick boundary, in arrival order (then the script).
    apply_commands(commands);
    sim->run_script();
    if (sim->tick_hz() != tick_hz) {
      // A new rate applies from now, not from the old schedule.
      tick_hz = sim->tick_hz();
      update_rate();
      next = std::min(next, t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / tick_hz)));
    }
    const auto period = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / tick_hz));
    const bool running = !sim->paused();
    if (running && !was_running) next = t0;  // resumed: the schedule starts now
    was_running = running;
    // New connections' Welcome must already show what the commands changed.
    if (!commands.empty()) publish_public();

    if (sim->should_step() && (!running || t0 >= next)) {
      const auto due = next;
      // 2. Step.
      const auto t_step = Clock::now();
      sim->step();
      const double step_s = std::chrono::duration<double>(Clock::now() - t_step).count();
      const World& world = sim->world();
      if (hub.needed_variants() & kEventVariants) {
        for (const CollisionEvent& e : world.events()) {
          if (events.size() >= kMaxEventsKept) {
            ++events_dropped;
            continue;
          }
          events.push_back(TickEvent{e, sim->tick()});
        }
        events_dropped += world.stats().events_dropped;
      }
      sim->take_edited();
      hub.take_resend();
      // 3. Snapshot: captured here, encoded and sent by the snapshot thread.
      // A finished Step's result follows its snapshot.
      std::optional<v1::CommandResult> finished = sim->take_finished_step();
      if (sim->tick() % snapshot_every == 0 || !running) {
        publish_snapshot(std::move(finished));
        last_stream = Clock::now();
      } else if (finished) {
        answer(step_waiter, std::move(*finished));
      }
      publish_public();
      const auto end = Clock::now();
      if (running) {
        // Late: finished more than one period after it was due. Then keep the
        // schedule, but never burst to catch up after a stall.
        if (end - due > period) ++tick_times.late;
        next = std::max(due + period, end - period);
        tick_times.add(std::chrono::duration<double>(end - std::max(t0, due)).count(), step_s);
      }
    } else if (!running && (sim->take_edited() | hub.take_resend())) {
      // Paused and edited, or a viewer joined: the same tick again.
      publish_snapshot();
      publish_public();
      last_stream = Clock::now();
    } else if (!running && Clock::now() - last_stream >= std::chrono::seconds(1)) {
      v1::ServerMessage m;
      m.mutable_heartbeat()->set_tick(sim->tick());
      m.mutable_heartbeat()->set_server_time_ns(monotonic_ns());
      hub.broadcast_stream(std::make_shared<const std::string>(proto::encode_frame(m)));
      last_stream = Clock::now();
      publish_public();
    }
    if (!options.state.empty() && options.save_every_s > 0 &&
        Clock::now() - last_save >= std::chrono::duration<double>(options.save_every_s)) {
      if (Status st = save_state(options.state); !st.ok()) spdlog::error("periodic save: {}", st.message());
      last_save = Clock::now();
    }
  }
}

Status Server::Impl::save_state(const std::string& path) {
  v1::SavedWorld saved;
  sim->save(&saved);
  std::string bytes;
  if (!saved.SerializeToString(&bytes)) return {StatusCode::kInvalidArgument, path + ": cannot serialize the world"};
  std::string error;
  if (!proto::write_file_atomically(path, bytes, &error)) return {StatusCode::kInvalidArgument, error};
  return {};
}

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Server::~Server() { stop("server shutting down"); }

Status Server::start() {
  Impl& s = *impl_;
  if (Status st = s.load_initial(); !st.ok()) return st;
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(s.options.bind, ec);
  if (ec) return {StatusCode::kInvalidArgument, "--bind " + s.options.bind + ": not an IP address"};
  if (!address.is_loopback() && s.options.token.empty() && !s.options.insecure) {
    return {StatusCode::kInvalidArgument,
            "--bind " + s.options.bind +
                " is not loopback and no token is set: set --token (or CAROM_TOKEN), or pass --insecure"};
  }
  const tcp::endpoint endpoint(address, s.options.port);
  if (const auto listen_ec = s.listener->listen(endpoint)) {
    return {StatusCode::kInvalidArgument,
            "cannot listen on " + s.options.bind + ":" + std::to_string(s.options.port) + ": " + listen_ec.message()};
  }
  s.port = s.listener->port();
  s.listener->run();
  for (int i = 0; i < std::max(1, s.options.io_threads); ++i) s.io_threads.emplace_back([&s] { s.io.run(); });
  s.publisher.start();
  s.sim_thread = std::thread([&s] { s.run_sim(); });
  {
    std::lock_guard lock(s.done_mutex);
    s.started = true;
  }
  return {};
}

std::uint16_t Server::port() const { return impl_->port; }

void Server::stop(const std::string& reason) {
  Impl& s = *impl_;
  {
    std::unique_lock lock(s.done_mutex);
    if (!s.started || s.done) return;
    if (s.stopping.exchange(true)) {
      s.done_cv.wait(lock, [&] { return s.done; });
      return;
    }
  }
  s.hub.wake();
  if (s.sim_thread.joinable()) s.sim_thread.join();
  s.publisher.stop();  // the last snapshot and results go out before the Goodbyes
  s.listener->close();
  s.hub.goodbye_all(reason);
  // Give the Goodbyes a moment to leave (each session closes after its
  // Goodbye is written and leaves the hub), at most a second; then stop the
  // network.
  (void)s.hub.wait_until_empty(std::chrono::seconds(1));
  s.io.stop();
  for (auto& t : s.io_threads) t.join();
  s.io_threads.clear();
  for (const std::string& path : {s.options.save_on_exit, s.options.state}) {
    if (path.empty()) continue;
    if (Status st = s.save_state(path); !st.ok()) {
      spdlog::error("save on exit: {}", st.message());
    } else {
      spdlog::info("saved the world to {} (state hash {:016x})", path, s.sim->world().state_hash());
    }
  }
  {
    std::lock_guard lock(s.done_mutex);
    s.done = true;
  }
  s.done_cv.notify_all();
}

void Server::wait() {
  std::unique_lock lock(impl_->done_mutex);
  impl_->done_cv.wait(lock, [&] { return impl_->done || !impl_->started; });
}

}  // namespace carom::server
