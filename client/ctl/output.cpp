// Readable output. Numbers use %g so that values of any scale stay short;
// get-world --text / --json give full precision for anything that needs it.

#include "output.hpp"

#include <vector>

#include <google/protobuf/util/json_util.h>

#include "carom/client/names.hpp"

namespace carom::ctl {

std::string to_json(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out;
  const auto status = google::protobuf::util::MessageToJsonString(message, &out, options);
  if (!status.ok()) return "{\"error\": \"cannot convert to JSON\"}";
  return out;
}

std::string command_name(const v1::Command& command) {
  if (command.kind_case() == v1::Command::KIND_NOT_SET) return "empty";
  const auto* field = command.GetDescriptor()->FindFieldByNumber(static_cast<int>(command.kind_case()));
  return field != nullptr ? field->name() : "unknown";
}


void print_params(std::FILE* out, const v1::WorldParams& p) {
  if (p.has_bounds()) {
    const auto& b = p.bounds();
    if (b.walled()) {
      std::fprintf(out, "bounds        walled box (%g, %g) .. (%g, %g) m\n", b.min().x(), b.min().y(), b.max().x(),
                   b.max().y());
    } else {
      std::fprintf(out, "bounds        unbounded\n");
    }
  }
  if (p.has_gravity()) std::fprintf(out, "gravity       %g, %g m/s^2\n", p.gravity().x(), p.gravity().y());
  if (p.has_restitution()) std::fprintf(out, "restitution   %g\n", p.restitution());
  if (p.has_linear_damping()) std::fprintf(out, "damping       %g 1/s\n", p.linear_damping());
  if (p.has_solver()) std::fprintf(out, "solver        %s\n", client::solver_name(p.solver()).c_str());
  if (p.has_substeps()) std::fprintf(out, "substeps      %u\n", p.substeps());
  if (p.has_iterations()) std::fprintf(out, "iterations    %u\n", p.iterations());
  if (p.has_dt()) std::fprintf(out, "dt            %g s\n", p.dt());
  if (p.has_density()) std::fprintf(out, "density       %g kg/m^2\n", p.density());
  if (p.has_tick_hz()) std::fprintf(out, "tick_hz       %g\n", p.tick_hz());
  if (p.has_mutual() && p.mutual().enabled()) {
    const auto& m = p.mutual();
    std::fprintf(out, "mutual        G %g, softening %g m, %s (theta %g)\n", m.g(), m.softening(),
                 client::gravity_method_name(m.method()).c_str(), m.theta());
  }
}

void print_stats(std::FILE* out, const v1::Stats& s) {
  std::fprintf(out, "tick          %llu (%s, %g Hz)\n", static_cast<unsigned long long>(s.tick()),
               s.paused() ? "paused" : "running", s.tick_hz());
  std::fprintf(out, "bodies        %u\n", s.bodies());
  std::fprintf(out, "contacts      %llu\n", static_cast<unsigned long long>(s.contacts()));
  std::fprintf(out, "collisions    %llu\n", static_cast<unsigned long long>(s.collisions()));
  if (s.events_processed() > 0 || s.events_capped())
    std::fprintf(out, "events        %llu (%llu at walls)%s   pressure %g N/m\n",
                 static_cast<unsigned long long>(s.events_processed()),
                 static_cast<unsigned long long>(s.wall_collisions()), s.events_capped() ? " CAPPED" : "",
                 s.pressure());
  std::fprintf(out, "kinetic       %g J\n", s.kinetic_energy());
  if (s.potential_energy() != 0.0)
    std::fprintf(out, "potential     %g J   total %g J\n", s.potential_energy(), s.kinetic_energy() + s.potential_energy());
  std::fprintf(out, "momentum      %g, %g kg m/s\n", s.momentum().x(), s.momentum().y());
  // The world's last step (none yet: no time and no threads to name, as
  // carom-view's heads-up line and the page show none).
  if (s.step_threads() == 0) {
    std::fprintf(out, "step          none yet\n");
  } else {
    std::fprintf(out, "step          %.3f ms on %u thread%s\n", s.step_seconds() * 1e3, s.step_threads(),
                 s.step_threads() == 1 ? "" : "s");
  }
  std::fprintf(out, "tick time     p50 %.3f ms  p99 %.3f ms  max %.3f ms  over %llu ticks, %llu late\n",
               s.tick_p50_seconds() * 1e3, s.tick_p99_seconds() * 1e3, s.tick_max_seconds() * 1e3,
               static_cast<unsigned long long>(s.ticks_measured()), static_cast<unsigned long long>(s.late_ticks()));
  std::fprintf(out, "clients       %u\n", s.clients());
  std::fprintf(out, "skipped       %llu snapshots\n", static_cast<unsigned long long>(s.snapshots_skipped()));
}

void print_world_table(std::FILE* out, const v1::SavedWorld& w) {
  std::fprintf(out, "# tick %llu  %s  bodies %d  hash %016llx\n", static_cast<unsigned long long>(w.tick()),
               w.paused() ? "paused" : "running", w.id_size(), static_cast<unsigned long long>(w.state_hash()));
  std::fprintf(out, "%10s %13s %13s %13s %13s %11s %11s\n", "id", "x", "y", "vx", "vy", "r", "m");
  const int n = w.id_size();
  // The arrays are parallel; a short one (a malformed reply) prints as 0.
  auto at = [n](const google::protobuf::RepeatedField<double>& field, int i) {
    return field.size() == n ? field.Get(i) : 0.0;
  };
  for (int i = 0; i < n; ++i) {
    std::fprintf(out, "%10u %13.6g %13.6g %13.6g %13.6g %11.5g %11.5g\n", w.id(i), at(w.x(), i), at(w.y(), i),
                 at(w.vx(), i), at(w.vy(), i), at(w.radius(), i), at(w.mass(), i));
  }
}

}  // namespace carom::ctl
