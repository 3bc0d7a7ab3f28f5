// The simulation thread. Reads: the hub's command queue (swapped out whole
// at each wake-up) and which snapshot variants the sessions want. Writes: the
// SimState, the captures it hands to the snapshot thread, the hub's public
// facts (for Welcomes) and the results it answers. Commands apply at a tick
// boundary in the order they arrived (the hub's sequence), before the script
// and the step, so the same commands give the same world.

#include "tick_loop.hpp"

#include <algorithm>
#include <spdlog/spdlog.h>
#include <utility>

#include "carom/proto/framing.hpp"
#include "publisher.hpp"
#include "session.hpp"
#include "sim_state.hpp"
#include "state_file.hpp"

namespace carom::server {

namespace {
// While paused, a heartbeat goes out when nothing else did for this long.
constexpr std::chrono::seconds kHeartbeatPeriod{1};
}  // namespace

TickLoop::TickLoop(SimState& sim, Hub& hub, SnapshotPublisher& publisher, const ServerOptions& options)
    : sim_(sim), hub_(hub), publisher_(publisher), options_(options) {}

void TickLoop::start() { thread_ = std::thread([this] { run(); }); }

void TickLoop::stop() {
  stopping_.store(true);
  hub_.wake();
  if (thread_.joinable()) thread_.join();
}

void TickLoop::run() {
  std::vector<PendingCommand> commands;
  tick_hz_ = sim_.tick_hz();
  update_rate();
  next_ = Clock::now();
  last_stream_ = next_;
  last_save_ = next_;
  was_running_ = false;
  publish_public();
  while (!stopping_.load()) {
    hub_.wait_commands(wake_time(), &commands);
    if (stopping_.load()) break;
    const auto woke = Clock::now();
    on_commands(commands, woke);
    const bool running = !sim_.paused();
    if (sim_.should_step() && (!running || woke >= next_)) {
      on_tick(woke, running);
    } else if (!running && take_paused_changes()) {
      on_paused_change();
    } else if (!running && Clock::now() - last_stream_ >= kHeartbeatPeriod) {
      on_heartbeat();
    }
    save_if_due();
  }
  answer(sim_.shown_tick());  // what was applied is answered before the Goodbye
}

TickLoop::Clock::time_point TickLoop::wake_time() const {
  // Until the next tick is due (or, while paused, up to a heartbeat), waking
  // early for commands. A Step command runs its ticks back to back.
  if (sim_.paused() && sim_.should_step()) return Clock::now();
  return sim_.should_step() ? next_ : last_stream_ + kHeartbeatPeriod;
}

TickLoop::Clock::duration TickLoop::period() const {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / tick_hz_));
}

void TickLoop::on_commands(std::vector<PendingCommand>& commands, Clock::time_point now) {
  apply_commands(commands);
  sim_.run_script();
  if (sim_.tick_hz() != tick_hz_) {
    // A new rate applies from now, not from the old schedule.
    tick_hz_ = sim_.tick_hz();
    update_rate();
    next_ = std::min(next_, now + period());
  }
  const bool running = !sim_.paused();
  if (running && !was_running_) next_ = now;  // resumed: the schedule starts now
  was_running_ = running;
  // New connections' Welcome must already show what the commands changed.
  if (!commands.empty()) publish_public();
}

void TickLoop::apply_commands(std::vector<PendingCommand>& commands) {
  // A result names the first snapshot that shows what its command did: the
  // next tick if the world runs on, else the current tick re-sent. Which one
  // is known only when the world steps or stops: a pause may come in a later
  // wake-up (a client's spawn and pause, sent in one write, can arrive in two
  // reads). So while the world runs, results wait for the step (at most one
  // tick); while paused they go at once.
  std::vector<std::pair<std::weak_ptr<Session>, v1::CommandResult>>& answers = unanswered_;
  for (PendingCommand& p : commands) {
    v1::CommandResult result;
    const bool answered = sim_.apply(p.command, &result);
    if (p.command.has_get_stats() && result.code() == v1::OK) {
      if (p.command.get_stats().reset_timing()) tick_times_.reset();
      fill_stats(result.mutable_stats());
    }
    if (answered) {
      answers.emplace_back(p.from, std::move(result));
    } else {
      step_waiter_ = p.from;
    }
  }
  if (sim_.paused()) answer(sim_.tick());
}

void TickLoop::answer(std::uint64_t tick) {
  for (auto& [from, result] : unanswered_) {
    result.set_tick(tick);
    send_result(from, std::move(result));
  }
  unanswered_.clear();
}

void TickLoop::on_tick(Clock::time_point woke, bool running) {
  const auto due = next_;
  const auto t_step = Clock::now();
  sim_.step();
  const double step_s = std::chrono::duration<double>(Clock::now() - t_step).count();
  answer(sim_.tick());
  collect_events();
  sim_.take_edited();
  hub_.take_resend();
  // Captured here, encoded and sent by the snapshot thread. A finished Step's
  // result follows its snapshot.
  std::optional<v1::CommandResult> finished = sim_.take_finished_step();
  if (sim_.tick() % snapshot_every_ == 0 || !running) {
    publish_snapshot(std::move(finished));
    last_stream_ = Clock::now();
  } else if (finished) {
    send_result(step_waiter_, std::move(*finished));
  }
  publish_public();
  const auto end = Clock::now();
  if (running) {
    // Late: finished more than one period after it was due. Then keep the
    // schedule, but never burst to catch up after a stall.
    if (end - due > period()) ++tick_times_.late;
    next_ = std::max(due + period(), end - period());
    tick_times_.add(std::chrono::duration<double>(end - std::max(woke, due)).count(), step_s);
  }
}

void TickLoop::collect_events() {
  if (!(hub_.needed_variants() & kEventVariants)) return;
  const World& world = sim_.world();
  const BodiesView bodies = world.bodies();
  for (const CollisionEvent& e : world.events()) {
    if (events_.size() >= SnapshotPublisher::kMaxEvents) {
      ++events_dropped_;
      continue;
    }
    events_.push_back(TickEvent{e, sim_.tick(), event_speed(bodies, e)});
  }
  events_dropped_ += world.stats().events_dropped;
}

bool TickLoop::take_paused_changes() {
  // Both flags are taken, whichever is set: one re-sent tick answers both.
  const bool edited = sim_.take_edited();
  const bool joined = hub_.take_resend();
  return edited || joined;
}

void TickLoop::on_paused_change() {
  // Paused and edited, or a viewer joined: the same tick again.
  publish_snapshot();
  publish_public();
  last_stream_ = Clock::now();
}

void TickLoop::on_heartbeat() {
  v1::ServerMessage m;
  m.mutable_heartbeat()->set_tick(sim_.tick());
  m.mutable_heartbeat()->set_server_time_ns(monotonic_ns());
  hub_.broadcast_stream(std::make_shared<const std::string>(proto::encode_frame(m)));
  last_stream_ = Clock::now();
  publish_public();
}

void TickLoop::save_if_due() {
  if (options_.state.empty() || options_.save_every_s <= 0 ||
      Clock::now() - last_save_ < std::chrono::duration<double>(options_.save_every_s)) {
    return;
  }
  if (Status st = save_state_file(sim_, options_.state); !st.ok()) spdlog::error("periodic save: {}", st.message());
  last_save_ = Clock::now();
}

void TickLoop::publish_snapshot(std::optional<v1::CommandResult> after) {
  const unsigned needed = hub_.needed_variants();
  if (needed == 0) {
    events_.clear();
    events_dropped_ = 0;
    if (after) send_result(step_waiter_, std::move(*after));
    return;
  }
  // Only copies here: the hash, the encoding and the hand-off to the sessions
  // are the snapshot thread's.
  std::unique_ptr<SnapshotCapture> c = publisher_.buffer();
  capture_snapshot(sim_, needed, c.get());
  c->keyed = hub_.needed_keyed(&c->needed);
  c->server_time_ns = monotonic_ns();
  sim_.fill_stats(&c->stats);
  c->stats.set_clients(static_cast<std::uint32_t>(hub_.clients()));
  c->stats.set_snapshots_skipped(hub_.snapshots_skipped.load());
  c->events.swap(events_);
  events_.clear();
  c->events_dropped = events_dropped_;
  events_dropped_ = 0;
  tick_times_.take_fresh(&c->timing);
  if (after) c->after.emplace_back(step_waiter_, std::move(*after));
  publisher_.publish(std::move(c));
}

void TickLoop::publish_public() {
  PublicState p;
  sim_.fill_params(&p.params);
  p.tick_hz = sim_.tick_hz();
  p.tick = sim_.tick();
  p.paused = sim_.paused();
  hub_.set_public(std::move(p));
}

void TickLoop::fill_stats(v1::Stats* out) {
  sim_.fill_stats(out);
  tick_times_.fill(out);
  out->set_clients(static_cast<std::uint32_t>(hub_.clients()));
  out->set_snapshots_skipped(hub_.snapshots_skipped.load());
}

void TickLoop::update_rate() {
  snapshot_every_ =
      options_.snapshot_hz > 0
          ? std::max<std::uint64_t>(1, static_cast<std::uint64_t>(sim_.tick_hz() / options_.snapshot_hz + 0.5))
          : 1;
}

}  // namespace carom::server
