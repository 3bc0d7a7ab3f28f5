// SimState: the world plus what the tick loop keeps beside it, and the one
// place where protocol Commands become World calls.
//
// Every command is all or nothing: it checks everything it can before the
// first change, and the World calls it makes are themselves all or nothing,
// so a failed command leaves the world (bodies and hidden solver state), the
// tick, the flags and the script exactly as they were. Worlds that replace
// the current one (scenario, saved world, reset) are built aside and moved
// in only once complete.

#include "sim_state.hpp"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "convert.hpp"
#include "generators.hpp"
#include "scenario_list.hpp"

namespace carom::server {

namespace gp = google::protobuf;

namespace {

std::string unknown_id(BodyId id) { return "unknown body id " + std::to_string(id); }

// Adds `bodies`, then the bodies of `generators`, to `world`: all or none.
// Fields are relative to the message holding both lists ("bodies[3].radius",
// index 3; "generators[1].random_disc.count").
Status add_spawn(World& world, const gp::RepeatedPtrField<v1::Body>& bodies,
                 const gp::RepeatedPtrField<v1::Generator>& generators, std::vector<BodyId>* ids) {
  // Count first, in 64 bits: a request for 10^9 bodies must fail before
  // anything is allocated for it.
  const std::uint64_t limit = world.config().max_bodies;
  std::uint64_t total = world.size();
  auto too_many = [&](const std::string& field, std::uint64_t count) {
    return Status{StatusCode::kResourceExhausted, field,
                  std::to_string(count) + " bodies would exceed the limit of " + std::to_string(limit) +
                      " (--max-bodies) with " + std::to_string(total) + " before them"};
  };
  if (static_cast<std::uint64_t>(bodies.size()) > limit - total) return too_many("bodies", bodies.size());
  total += static_cast<std::uint64_t>(bodies.size());
  for (int g = 0; g < generators.size(); ++g) {
    const std::uint64_t count = generator_count(generators[g]);
    if (count > limit - total) {
      const std::string shape = generator_shape(generators[g]);
      return too_many("generators[" + std::to_string(g) + "]." + shape + (shape == "grid" ? "" : ".count"), count);
    }
    total += count;
  }

  std::vector<BodyDesc> descs;
  descs.reserve(static_cast<std::size_t>(total - world.size()));
  for (const v1::Body& b : bodies) descs.push_back(body_from_proto(b));
  const std::size_t explicit_count = descs.size();
  std::vector<std::size_t> generated_from;  // first index of each generator's bodies
  std::vector<BodyDesc> made;
  for (int g = 0; g < generators.size(); ++g) {
    generated_from.push_back(descs.size());
    made.clear();
    if (Status st = generate(generators[g], world, descs, &made); !st.ok())
      return st.within("generators[" + std::to_string(g) + "]");
    descs.insert(descs.end(), made.begin(), made.end());
  }

  // Nothing to add must change nothing: add_bodies would still count as an
  // edit and drop the warm starts.
  if (descs.empty()) return {};
  const Status st = world.add_bodies(descs, ids);
  if (st.ok() || !st.index()) return st;
  const std::size_t k = *st.index();
  if (k < explicit_count) return st.in_batch("bodies", k);
  // A generated body has no path of its own: its generator is the field.
  const auto g = static_cast<std::size_t>(
      std::upper_bound(generated_from.begin(), generated_from.end(), k) - generated_from.begin() - 1);
  return {st.code(), "generators[" + std::to_string(g) + "]." + generator_shape(generators[static_cast<int>(g)]),
          "generated body " + std::to_string(k - generated_from[g]) + ": " +
              field_message(st.item_field(), st.reason())};
}

}  // namespace

v1::ErrorCode to_error_code(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return v1::OK;
    case StatusCode::kInvalidArgument: return v1::INVALID_ARGUMENT;
    case StatusCode::kNotFound: return v1::NOT_FOUND;
    case StatusCode::kOutOfRange: return v1::OUT_OF_RANGE;
    case StatusCode::kAlreadyExists: return v1::ALREADY_EXISTS;
    case StatusCode::kResourceExhausted: return v1::RESOURCE_EXHAUSTED;
  }
  return v1::INTERNAL;
}

SimState::SimState(const SimOptions& options)
    : options_(options), world_(options.config, Params{}), tick_hz_(options.tick_hz) {
  save(&reset_point_);
}

Status SimState::load_scenario(const v1::Scenario& scenario, const std::string& filename,
                               const proto::TextLocations* locations) {
  // "FILE:LINE: path: what", the line found from the field. The file is no
  // part of any request, so the result names no field.
  auto located = [&](const Status& st) -> Status {
    if (filename.empty() && locations == nullptr) return st;
    const int line = locations != nullptr ? locations->line_of(scenario, st.field()) : 0;
    std::string where = filename.empty() ? std::string("scenario") : filename;
    if (line > 0) where.append(":").append(std::to_string(line));
    return {st.code(), where.append(": ").append(st.message())};
  };
  Params params;
  double hz = options_.tick_hz;
  if (Status st = apply_params(scenario.params(), &params, &hz); !st.ok()) return located(st.within("params"));
  World world(options_.config, Params{});
  if (Status st = world.set_params(params); !st.ok()) return located(st.within("params"));
  if (Status st = add_spawn(world, scenario.bodies(), scenario.generators(), nullptr); !st.ok()) return located(st);
  for (int k = 0; k < scenario.script_size(); ++k)
    if (scenario.script(k).command().kind_case() == v1::Command::KIND_NOT_SET)
      return located({StatusCode::kInvalidArgument, "script[" + std::to_string(k) + "].command", "no command given"});

  world_ = std::move(world);
  tick_hz_ = hz;
  reset_script_.assign(scenario.script().begin(), scenario.script().end());
  std::stable_sort(reset_script_.begin(), reset_script_.end(),
                   [](const v1::TimedCommand& l, const v1::TimedCommand& r) { return l.tick() < r.tick(); });
  start_script(reset_script_);
  save(&reset_point_);
  edited_ = true;
  return {};
}

Status SimState::load_saved(const v1::SavedWorld& saved) {
  World world(options_.config, Params{});
  double hz = tick_hz_;
  if (Status st = load_world(saved, options_.config, options_.tick_hz, &world, &hz); !st.ok())
    return st.within("world");
  world_ = std::move(world);
  tick_hz_ = hz;
  paused_ = saved.paused();
  // Ticks never go back, and a server restarted from its state file goes on
  // from the saved tick.
  tick_ = std::max(tick_, saved.tick());
  reset_script_.clear();
  start_script(reset_script_);
  save(&reset_point_);
  edited_ = true;
  return {};
}

Status SimState::restore_reset_point() {
  World world(options_.config, Params{});
  double hz = tick_hz_;
  if (Status st = load_world(reset_point_, options_.config, options_.tick_hz, &world, &hz); !st.ok()) return st;
  world_ = std::move(world);
  tick_hz_ = hz;
  start_script(reset_script_);
  edited_ = true;
  return {};
}

void SimState::start_script(const std::vector<v1::TimedCommand>& script) {
  script_ = script;
  script_next_ = 0;
  script_start_ = tick_;
  ++script_generation_;
}

void SimState::save(v1::SavedWorld* out) const {
  save_world(world_, tick_hz_, out);
  out->set_tick(tick_);
  out->set_paused(paused_);
}

bool SimState::apply(const v1::Command& command, v1::CommandResult* result) {
  result->Clear();
  result->set_request_id(command.request_id());
  bool accepted_step = false;
  const Failure failure = apply_kind(command, result, &accepted_step);
  if (failure.code != v1::OK) {
    result->clear_payload();
    result->set_code(failure.code);
    result->set_message(failure.message);
    result->set_field(failure.field);
  }
  if (accepted_step) {
    step_result_ = *result;
    step_from_script_ = in_script_;
    return false;
  }
  result->set_tick(shown_tick());
  return true;
}

SimState::Failure SimState::apply_kind(const v1::Command& command, v1::CommandResult* result, bool* accepted_step) {
  // A World or conversion refusal of the command's part at `parent`.
  auto failed = [](const Status& st, std::string_view parent) { return Failure(st.within(parent)); };
  // A Step in progress owns the next ticks: commands that would resume or
  // replace the world wait until it is done (its result says when).
  if (pending_steps_ > 0) {
    const auto kind = command.kind_case();
    if (kind == v1::Command::kResume || kind == v1::Command::kReset || kind == v1::Command::kLoadScenario ||
        kind == v1::Command::kLoadWorld) {
      return {v1::FAILED_PRECONDITION, "", "a step command is in progress (" + std::to_string(pending_steps_) +
                                           " ticks left): wait for its result"};
    }
  }
  switch (command.kind_case()) {
    case v1::Command::kPing: return {};

    case v1::Command::kSpawn: {
      std::vector<BodyId> ids;
      if (Status st = add_spawn(world_, command.spawn().bodies(), command.spawn().generators(), &ids); !st.ok())
        return failed(st, "spawn");
      result->mutable_spawned()->mutable_ids()->Assign(ids.begin(), ids.end());
      if (!ids.empty()) edited_ = true;
      return {};
    }

    case v1::Command::kRemove: {
      const v1::Remove& rm = command.remove();
      if (rm.all() && rm.ids_size() > 0) return {v1::INVALID_ARGUMENT, "remove", "give ids or all, not both"};
      if (rm.all()) {
        world_.clear();
        edited_ = true;
        return {};
      }
      if (rm.ids_size() == 0)
        return {v1::INVALID_ARGUMENT, "remove.ids", "none given (set all to remove every body)"};
      for (int k = 0; k < rm.ids_size(); ++k)
        if (!world_.contains(rm.ids(k)))
          return {v1::NOT_FOUND, "remove.ids[" + std::to_string(k) + "]", unknown_id(rm.ids(k))};
      const std::vector<BodyId> ids(rm.ids().begin(), rm.ids().end());
      if (Status st = world_.remove_bodies(ids); !st.ok()) return failed(st, "remove");
      edited_ = true;
      return {};
    }

    case v1::Command::kSetBody: {
      const v1::SetBody& sb = command.set_body();
      if (!sb.has_position() && !sb.has_velocity())
        return {v1::INVALID_ARGUMENT, "set_body", "give a position, a velocity or both"};
      BodyState before;
      if (!world_.body(sb.id(), &before).ok()) return {v1::NOT_FOUND, "set_body.id", unknown_id(sb.id())};
      // Velocity first: writing the old one back after a refused position
      // touches nothing but the cached energy, while a moved body would drop
      // the wall contacts and the pair list.
      if (sb.has_velocity())
        if (Status st = world_.set_velocity(sb.id(), from_proto(sb.velocity())); !st.ok())
          return failed(st, "set_body");
      if (sb.has_position()) {
        if (Status st = world_.set_position(sb.id(), from_proto(sb.position())); !st.ok()) {
          if (sb.has_velocity()) (void)world_.set_velocity(sb.id(), before.velocity);
          return failed(st, "set_body");
        }
      }
      edited_ = true;
      return {};
    }

    case v1::Command::kApplyImpulse: {
      const v1::ApplyImpulse& ai = command.apply_impulse();
      if (!world_.contains(ai.id())) return {v1::NOT_FOUND, "apply_impulse.id", unknown_id(ai.id())};
      if (Status st = world_.apply_impulse(ai.id(), from_proto(ai.impulse())); !st.ok())
        return failed(st, "apply_impulse");
      edited_ = true;
      return {};
    }

    case v1::Command::kSetParams: {
      Params params = world_.params();
      double hz = tick_hz_;
      if (Status st = apply_params(command.set_params().params(), &params, &hz); !st.ok())
        return failed(st, "set_params.params");
      if (Status st = world_.set_params(params); !st.ok()) return failed(st, "set_params.params");
      tick_hz_ = hz;
      edited_ = true;
      return {};
    }

    case v1::Command::kPause:
      if (!paused_) edited_ = true;
      paused_ = true;
      return {};

    case v1::Command::kResume:
      if (paused_) edited_ = true;
      paused_ = false;
      return {};

    case v1::Command::kStep: {
      if (!paused_) return {v1::FAILED_PRECONDITION, "", "step: only while paused (send pause first)"};
      if (pending_steps_ > 0 || step_finished_)
        return {v1::FAILED_PRECONDITION, "",
                "step: the previous step command has " + std::to_string(pending_steps_) + " ticks left"};
      const std::uint64_t count = command.step().count();
      if (count < 1 || count > kMaxStepCount)
        return {v1::OUT_OF_RANGE, "step.count",
                "must be 1.." + std::to_string(kMaxStepCount) + ", got " + std::to_string(count)};
      pending_steps_ = count;
      *accepted_step = true;
      return {};
    }

    case v1::Command::kReset:
      if (Status st = restore_reset_point(); !st.ok()) return {v1::INTERNAL, "", "reset: " + st.message()};
      return {};

    case v1::Command::kLoadScenario: {
      const v1::LoadScenario& ls = command.load_scenario();
      switch (ls.source_case()) {
        case v1::LoadScenario::kName: return load_named_scenario(ls.name());
        case v1::LoadScenario::kScenario:
          if (Status st = load_scenario(ls.scenario()); !st.ok()) return failed(st, "load_scenario.scenario");
          return {};
        case v1::LoadScenario::SOURCE_NOT_SET: break;
      }
      return {v1::INVALID_ARGUMENT, "load_scenario", "give a name or a scenario"};
    }

    case v1::Command::kSaveWorld:
    case v1::Command::kGetWorld: save(result->mutable_world()); return {};

    case v1::Command::kLoadWorld:
      if (Status st = load_saved(command.load_world().world()); !st.ok()) return failed(st, "load_world");
      return {};

    case v1::Command::kGetStats: fill_stats(result->mutable_stats()); return {};

    // Connections answer it themselves (ScenarioCatalog, off this thread):
    // only a scenario's script brings it here, where it has no one to answer.
    case v1::Command::kListScenarios:
      return {v1::INVALID_ARGUMENT, "list_scenarios", "answered to connections only, not in a scenario's script"};

    case v1::Command::KIND_NOT_SET: break;
  }
  return {v1::INVALID_ARGUMENT, "", "command: no command given"};
}

SimState::Failure SimState::load_named_scenario(const std::string& name) {
  if (!valid_scenario_name(name))
    return {v1::INVALID_ARGUMENT, "load_scenario.name",
            "must match [A-Za-z0-9_-]+ (at most " + std::to_string(kMaxScenarioName) + " characters), got '" +
                name.substr(0, kMaxScenarioName) + "'"};
  if (options_.scenario_dir.empty())
    return {v1::NOT_FOUND, "load_scenario.name",
            "no scenario '" + name + "': the server has no scenario directory (--scenario-dir)"};
  const std::string path = (std::filesystem::path(options_.scenario_dir) / (name + ".txtpb")).string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return {v1::NOT_FOUND, "load_scenario.name", "no scenario '" + name + "' in " + options_.scenario_dir};
  v1::Scenario scenario;
  proto::TextLocations where;
  std::string error;
  if (!proto::parse_text_file(path, &scenario, &error, &where)) return {v1::INVALID_ARGUMENT, "", error};
  if (Status st = load_scenario(scenario, path, &where); !st.ok()) return Failure(st);
  return {};
}

void SimState::run_script() {
  const std::uint64_t generation = script_generation_;
  while (script_next_ < script_.size() && script_[script_next_].tick() <= tick_ - script_start_) {
    // A copy: the command may replace the script (load_scenario, reset).
    const v1::Command command = script_[script_next_++].command();
    v1::CommandResult result;
    in_script_ = true;
    const bool answered = apply(command, &result);
    in_script_ = false;
    if (answered && result.code() != v1::OK) ++script_errors_;
    // A new script starts at the next call: a scenario that resets itself at
    // tick 0 must not loop here forever.
    if (script_generation_ != generation) return;
  }
}

bool SimState::should_step() const { return !paused_ || pending_steps_ > 0; }

void SimState::step() {
  world_.step();
  escaped_total_ += world_.stats().escaped;
  ++tick_;
  if (pending_steps_ > 0 && --pending_steps_ == 0 && step_result_) {
    step_result_->set_tick(tick_);
    step_finished_ = true;
  }
}

std::optional<v1::CommandResult> SimState::take_finished_step() {
  if (!step_finished_) return std::nullopt;
  step_finished_ = false;
  std::optional<v1::CommandResult> done = std::move(step_result_);
  step_result_.reset();
  if (step_from_script_) return std::nullopt;
  return done;
}

bool SimState::take_edited() { return std::exchange(edited_, false); }

void SimState::fill_stats(v1::Stats* out) const {
  const StepStats& s = world_.stats();
  out->set_bodies(static_cast<std::uint32_t>(world_.size()));
  out->set_contacts(s.contacts);
  out->set_collisions(s.collisions);
  out->set_kinetic_energy(s.kinetic_energy);
  to_proto(s.momentum, out->mutable_momentum());
  out->set_step_seconds(s.seconds.total);
  out->set_step_threads(s.threads);
  out->set_events_processed(s.events_processed);
  out->set_wall_collisions(s.wall_collisions);
  out->set_events_capped(s.events_capped);
  out->set_wall_impulse(s.wall_impulse);
  // Pressure in 2D: force per unit wall length, averaged over the tick.
  const Params& p = world_.params();
  const double perimeter =
      p.bounds.walled ? 2.0 * ((p.bounds.max.x - p.bounds.min.x) + (p.bounds.max.y - p.bounds.min.y)) : 0.0;
  out->set_pressure(perimeter > 0.0 ? s.wall_impulse / (p.dt * perimeter) : 0.0);
  out->set_paused(paused_);
  out->set_tick(tick_);
  out->set_tick_hz(tick_hz_);
  out->set_escaped(s.escaped);
  out->set_escaped_total(escaped_total_);
  out->set_potential_energy(s.potential_energy);
}

void SimState::fill_params(v1::WorldParams* out) const { params_to_proto(world_.params(), tick_hz_, out); }

}  // namespace carom::server
