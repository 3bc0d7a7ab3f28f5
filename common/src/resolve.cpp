// Contact resolution: resolve_contacts, and record_events.
//
// Reads:  the contacts of the narrow phase, ordered into rounds by
//         order_contacts (the minimum-ordering rule).
// Writes: velocities (discrete) and positions of the two bodies of each contact.
//
// Rounds run one after another; the contacts of one round share no body and run
// in parallel. The result equals applying every contact one by one in
// contact_key order (see contact_order.cpp), whatever the thread count.
//
// Discrete: with fa = m_a / (m_a + m_b) and fb = m_b / (m_a + m_b), the normal
// velocities u_a, u_b of an approaching pair (u_b - u_a < 0) become
//   u_a' = u_a + (1 + e) fb (u_b - u_a),   u_b' = u_b - (1 + e) fa (u_b - u_a),
// the textbook 1D result, written in mass fractions so equal masses give
// fractions of exactly 1/2. Then the remaining overlap along the normal is
// removed by moving a by fb and b by fa of it: positions only, no energy added.
// Verlet: the same position correction; velocities follow from the motion.

#include <cmath>

#include "parallel.hpp"
#include "stages.hpp"

namespace carom::detail {
namespace {

constexpr std::size_t kBlock = 2048;

inline void apply(BodyStore& b, Pair p, Contact& ct, bool impulses, double e, double inv_h) {
  const std::uint32_t i = p.a, j = p.b;
  const double ma = b.m[i], mb = b.m[j];
  const double fa = ma / (ma + mb), fb = mb / (ma + mb);
  const double nx = ct.nx, ny = ct.ny;
  if (impulses) {
    const double un = (b.vx[j] - b.vx[i]) * nx + (b.vy[j] - b.vy[i]) * ny;
    if (un < 0.0) {
      const double da = (1.0 + e) * fb * un;  // change of a's normal velocity
      const double db = (1.0 + e) * fa * un;  // minus the change of b's
      b.vx[i] += da * nx;
      b.vy[i] += da * ny;
      b.vx[j] -= db * nx;
      b.vy[j] -= db * ny;
      ct.impulse = -mb * db;
      ct.state = kCollided;
    }
  }
  const double sep = (b.x[j] - b.x[i]) * nx + (b.y[j] - b.y[i]) * ny - (b.r[i] + b.r[j]);
  if (sep < 0.0) {
    b.x[i] += fb * sep * nx;
    b.y[i] += fb * sep * ny;
    b.x[j] -= fa * sep * nx;
    b.y[j] -= fa * sep * ny;
    if (!impulses) {
      ct.impulse = -mb * fa * sep * inv_h;
      ct.state = kCollided;
    }
  }
}

}  // namespace

std::uint64_t resolve_contacts(BodyStore& b, Contacts& contacts, Solver solver, double e, double h) {
  const bool impulses = solver == Solver::kDiscrete;
  const double inv_h = 1.0 / h;
  ContactSchedule& s = contacts.schedule;
  order_contacts(b.id, contacts.pairs, s);
  const std::size_t rounds = s.rounds();
  for (std::size_t r = 0; r < rounds; ++r) {
    const std::size_t k0 = s.round_begin[r];
    const std::size_t len = s.round_begin[r + 1] - k0;
    for_blocks(len, kBlock, [&](std::size_t lo, std::size_t hi, std::size_t) {
      for (std::size_t k = k0 + lo; k < k0 + hi; ++k) {
        const std::uint32_t c = s.order[k];
        apply(b, contacts.pairs[c], contacts.geometry[c], impulses, e, inv_h);
      }
    });
  }
  std::uint64_t collisions = 0;
  for (const Contact& ct : contacts.geometry) collisions += ct.state == kCollided;
  return collisions;
}

std::uint64_t record_events(const BodyStore& b, const Contacts& contacts, std::uint32_t substep, std::size_t cap,
                            std::vector<CollisionEvent>& events) {
  std::uint64_t dropped = 0;
  for (std::size_t k = 0; k < contacts.size(); ++k) {
    const Contact& ct = contacts.geometry[k];
    if (ct.state != kCollided) continue;
    if (events.size() >= cap) {
      ++dropped;
      continue;
    }
    const Pair p = contacts.pairs[k];
    const double ra = b.r[p.a], rb = b.r[p.b];
    CollisionEvent ev;
    ev.a = b.id[p.a];
    ev.b = b.id[p.b];
    ev.point = {(rb * b.x[p.a] + ra * b.x[p.b]) / (ra + rb), (rb * b.y[p.a] + ra * b.y[p.b]) / (ra + rb)};
    ev.impulse = {ct.impulse * ct.nx, ct.impulse * ct.ny};
    ev.substep = substep;
    events.push_back(ev);
  }
  return dropped;
}

}  // namespace carom::detail
