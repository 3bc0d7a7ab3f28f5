// Contact resolution: resolve_contacts, and record_events.
//
// Reads:  the contacts of the narrow phase, ordered into rounds by
//         order_contacts (the minimum-ordering rule).
// Writes: velocities (discrete) and positions of the two bodies of each contact.
//
// Rounds run one after another; the contacts of one round share no body and run
// in parallel. The result equals applying every contact one by one in
// contact_key order (see contact_order.cpp), whatever the thread count. Walls
// (bodies pressed against one, from the last position update) act as
// infinitely heavy partners, in parallel before each pass over the pairs.
//
// Discrete (sequential impulses): with fa = m_a / (m_a + m_b) and
// fb = m_b / (m_a + m_b), changing the relative normal velocity u = u_b - u_a
// by du moves u_a by -fb du and u_b by +fa du (momentum unchanged). Two kinds
// of passes, each repeated up to Params::iterations until nothing acts:
//  1. Impacts. A pair approaching faster than the resting speed collides as an
//     isolated pair would: u becomes -e u, the textbook 1D result written in
//     mass fractions so equal masses give fractions of exactly 1/2. Walls
//     reflect the same way. Each impact is a whole two-body collision, so with
//     e = 1 each conserves kinetic energy and so does any cluster of them (a
//     blow passes down a row of touching bodies, as in Newton's cradle).
//     Relaxing a cluster as one inelastic block and adding the bounce after
//     (Box2D's way) loses energy whenever three bodies meet in a substep: an
//     elastic gas would cool by a third in half a minute.
//  2. Resting contacts. Whatever still approaches (slower than the resting
//     speed, or left by the iteration cap) is brought to u = 0, starting from
//     last substep's accumulated change (warm starting), which is what lets a
//     tall pile carry its weight: without it, support climbs one contact per
//     pass and the pile "falls" in place while the position correction hides
//     it. The accumulated change is kept >= 0, and does not include impacts.
// After integrate_positions, correct_positions runs three passes that each
// remove half the overlap left along each normal, moving a by fb and b by fa
// of it: positions only, no kinetic energy added.
// Verlet: the same position correction, Params::iterations passes;
// velocities follow from the motion.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <span>

#include "parallel.hpp"
#include "stages.hpp"

namespace carom::detail {
namespace {

constexpr std::size_t kBlock = 2048;
// Discrete position correction: each pass removes this fraction of the
// overlap left along each normal. A full correction overshoots in a jammed
// pile (pairs push each other back and forth, lifting the pile against
// gravity every substep: energy from nowhere); half, three times, settles.
constexpr double kPositionCorrection = 0.5;
constexpr int kPositionPasses = 3;

// Changes the relative normal velocity of a contact by du (m/s), sharing it
// by mass fractions so momentum is unchanged: a loses fb du, b gains fa du.
inline void push_velocity(BodyStore& b, Pair p, const Contact& ct, double du) {
  const double ma = b.m[p.a], mb = b.m[p.b];
  const double fa = ma / (ma + mb), fb = mb / (ma + mb);
  b.vx[p.a] -= fb * du * ct.nx;
  b.vy[p.a] -= fb * du * ct.ny;
  b.vx[p.b] += fa * du * ct.nx;
  b.vy[p.b] += fa * du * ct.ny;
}

inline double normal_velocity(const BodyStore& b, Pair p, const Contact& ct) {
  return (b.vx[p.b] - b.vx[p.a]) * ct.nx + (b.vy[p.b] - b.vy[p.a]) * ct.ny;
}

// Start of the discrete passes: nothing accumulated yet, not an impact (yet).
inline void classify(Contact& ct) {
  ct.accum = 0.0;
  ct.bounce = 0.0;
  ct.state = kTouching;
}

// An impact: a pair approaching faster than the resting speed collides as an
// isolated pair would, its relative normal velocity u becoming -e u (the
// textbook 1D result, u_a' = u_a + (1 + e) fb u, in mass fractions so equal
// masses give fractions of exactly 1/2). Every impact is a whole two-body
// collision, so with e = 1 each one conserves kinetic energy exactly, however
// many bodies meet in one substep (a body hit while touching two others passes
// the blow on, as in Newton's cradle). Returns whether it fired.
inline bool impact(BodyStore& b, Pair p, Contact& ct, double e, double resting) {
  const double un = normal_velocity(b, p, ct);
  if (!(un < -resting)) return false;
  const double du = -(1.0 + e) * un;
  push_velocity(b, p, ct, du);
  ct.bounce += du;
  ct.state = kCollided;
  return true;
}

// Resting contacts start from last substep's accumulated change: what lets
// a tall pile carry its weight (support would otherwise climb one contact per
// pass, and the pile would "fall" in place, the position correction hiding it).
inline void warm_start(BodyStore& b, Pair p, Contact& ct) {
  const double w = ct.impulse;  // the warm value until the passes end
  if (w > 0.0) {
    push_velocity(b, p, ct, w);
    ct.accum = w;
  }
}

// Moves the relative normal velocity to `target`, keeping the accumulated
// change >= 0 (contacts push, never pull). Changes below 1e-12 of the speeds
// involved count as converged and are not applied, so an isolated impact is
// exactly the textbook formula.
inline bool solve_velocity(BodyStore& b, Pair p, Contact& ct, double target) {
  const double un = normal_velocity(b, p, ct);
  const double tol = 1e-12 * (std::abs(target) + std::abs(un)) + 1e-300;
  double du = target - un;
  if (du <= tol && (du >= -tol || ct.accum == 0.0)) return false;
  du = std::max(du, -ct.accum);
  push_velocity(b, p, ct, du);
  ct.accum += du;
  return true;
}

inline void clamp_body(BodyStore& b, std::uint32_t i, const Bounds& box) {
  b.x[i] = std::clamp(b.x[i], box.min.x + b.r[i], box.max.x - b.r[i]);
  b.y[i] = std::clamp(b.y[i], box.min.y + b.r[i], box.max.y - b.r[i]);
}

// Removes `beta` of the overlap left along the normal; returns the correction
// (m). With a box, a wall holds a body it clamps and the other body moves.
inline double apply_position(BodyStore& b, Pair p, const Contact& ct, double beta = 1.0, const Bounds* box = nullptr) {
  const std::uint32_t i = p.a, j = p.b;
  const double nx = ct.nx, ny = ct.ny;
  const double sep = beta * ((b.x[j] - b.x[i]) * nx + (b.y[j] - b.y[i]) * ny - (b.r[i] + b.r[j]));
  if (!(sep < 0.0)) return 0.0;
  const double ma = b.m[i], mb = b.m[j];
  const double fa = ma / (ma + mb), fb = mb / (ma + mb);
  b.x[i] += fb * sep * nx;
  b.y[i] += fb * sep * ny;
  b.x[j] -= fa * sep * nx;
  b.y[j] -= fa * sep * ny;
  if (box) {
    // A wall holds a body it clamps: the other body takes that share.
    const double xi = b.x[i], yi = b.y[i], xj = b.x[j], yj = b.y[j];
    clamp_body(b, i, *box);
    clamp_body(b, j, *box);
    const bool held_i = b.x[i] != xi || b.y[i] != yi, held_j = b.x[j] != xj || b.y[j] != yj;
    if (held_i != held_j) {
      const double rest = beta * ((b.x[j] - b.x[i]) * nx + (b.y[j] - b.y[i]) * ny - (b.r[i] + b.r[j]));
      if (rest < 0.0) {
        const std::uint32_t k = held_i ? j : i;
        const double s = held_i ? -rest : rest;
        b.x[k] += s * nx;
        b.y[k] += s * ny;
        clamp_body(b, k, *box);
      }
    }
  }
  return -sep;
}

// A wall is an infinitely heavy partner. For each wall a body touches (entry:
// storage index << 4 | wall bits) whose velocity component points into it,
// `into(v)` may change that component; returns whether any call did.
template <class Into>
inline bool for_walls_into(BodyStore& b, std::uint32_t entry, Into&& into) {
  const std::uint32_t i = entry >> 4;
  bool hit = false;
  auto axis = [&](double& v, bool lo, bool hi) {
    if ((lo && v < 0.0) || (hi && v > 0.0)) hit |= into(v);
  };
  axis(b.vx[i], entry & kWallMinX, entry & kWallMaxX);
  axis(b.vy[i], entry & kWallMinY, entry & kWallMaxY);
  return hit;
}

// Impact passes: a velocity into a wall faster than the resting speed is
// reflected with restitution (a contact pushed the body back into the wall it
// bounced off in integrate_positions); slower ones are the resting passes'.
inline bool bounce_walls(BodyStore& b, std::uint32_t entry, double e, double resting) {
  return for_walls_into(b, entry, [&](double& v) {
    if (!(std::abs(v) > resting)) return false;
    v = -e * v;
    return true;
  });
}

// Resting passes: the velocity into a wall is removed.
inline bool stop_walls(BodyStore& b, std::uint32_t entry) {
  return for_walls_into(b, entry, [](double& v) {
    v = 0.0;
    return true;
  });
}

// Runs fn(contact index) for every contact, round by round, the contacts of
// a round in parallel. Returns the sum of fn's results (an integer, so the
// grouping does not matter).
template <class Fn>
std::uint64_t for_rounds(const ContactSchedule& s, Fn&& fn) {
  std::atomic<std::uint64_t> total{0};
  for (std::size_t r = 0; r < s.rounds(); ++r) {
    const std::size_t k0 = s.round_begin[r];
    const std::size_t len = s.round_begin[r + 1] - k0;
    for_blocks(len, kBlock, [&](std::size_t lo, std::size_t hi, std::size_t) {
      std::uint64_t count = 0;
      for (std::size_t k = k0 + lo; k < k0 + hi; ++k) count += fn(s.order[k]);
      if (count) total.fetch_add(count, std::memory_order_relaxed);
    });
  }
  return total.load();
}

// Islands below this many contacts in all, each below kMaxIsland, run as
// islands; else by rounds (the same rule, so the same bits either way: the
// choice is speed only). Islands need one parallel loop per stage where rounds
// need one per round and pass; a pile's single huge island needs rounds, and
// many contacts make the (sequential) union-find cost more than the rounds.
// After a failed try (an island too big) islands are not tried again for
// kIslandBackoff substeps: piles stay piles.
constexpr std::size_t kIslandsBelow = 1 << 13;
constexpr std::size_t kMaxIsland = 2048;
constexpr std::size_t kIslandChunk = 64;
constexpr std::uint32_t kIslandBackoff = 16;  // contacts per parallel task, roughly

// Runs fn(contacts of island, walls of island) for every island, islands in
// parallel (they share no body, so any split gives the same bits).
template <class Fn>
void for_islands(const ContactIslands& is, Fn&& fn) {
  const std::size_t n = is.size();
  if (n == 0) return;
  const std::size_t per_task = std::max<std::size_t>(1, n * kIslandChunk / std::max<std::size_t>(is.order.size(), 1));
  for_blocks(n, per_task, [&](std::size_t k0, std::size_t k1, std::size_t) {
    for (std::size_t k = k0; k < k1; ++k) {
      fn(std::span<const std::uint32_t>(is.order.data() + is.begin[k], is.begin[k + 1] - is.begin[k]),
         std::span<const std::uint32_t>(is.walls.data() + is.walls_begin[k], is.walls_begin[k + 1] - is.walls_begin[k]));
    }
  });
}

// Verlet: one contact's push-apart, its implied impulse recorded. Returns
// whether it moved anything.
inline bool push_apart(BodyStore& b, Pair pr, Contact& ct, double inv_h) {
  const double fa = b.m[pr.a] / (b.m[pr.a] + b.m[pr.b]);
  const double corr = apply_position(b, pr, ct);
  if (corr == 0.0) return false;
  ct.impulse += b.m[pr.b] * fa * corr * inv_h;
  ct.state = kCollided;
  return true;
}

// The discrete velocity passes of one island (or, by rounds, of all
// contacts): what resolve_contacts documents, per island.
template <class Contacts_, class Walls_>
void solve_island(BodyStore& b, std::span<const Pair> pairs, std::vector<Contact>& geo,
                           bool warmed, const Params& p, double resting,
                           const Contacts_& cs, const Walls_& ws) {
  const double e = p.restitution;
  for (const std::uint32_t c : cs) classify(geo[c]);
  for (int it = 0; it < p.iterations; ++it) {
    bool fired = false;
    for (const std::uint32_t entry : ws) fired |= bounce_walls(b, entry, e, resting);
    for (const std::uint32_t c : cs) fired |= impact(b, pairs[c], geo[c], e, resting);
    if (!fired) break;
  }
  if (warmed)
    for (const std::uint32_t c : cs) warm_start(b, pairs[c], geo[c]);
  for (int it = 0; it < p.iterations; ++it) {
    bool changed = false;
    for (const std::uint32_t entry : ws) changed |= stop_walls(b, entry);
    for (const std::uint32_t c : cs) changed |= solve_velocity(b, pairs[c], geo[c], 0.0);
    if (!changed) break;
  }
}

// Verlet: the position passes of one island.
template <class Contacts_>
void push_island(BodyStore& b, std::span<const Pair> pairs, std::vector<Contact>& geo, const Params& p, double inv_h,
                 const Contacts_& cs) {
  for (int it = 0; it < p.iterations; ++it) {
    bool moved = false;
    for (const std::uint32_t c : cs) moved |= push_apart(b, pairs[c], geo[c], inv_h);
    if (!moved) break;
  }
}

}  // namespace

std::uint64_t resolve_contacts(BodyStore& b, Contacts& contacts, const WallContacts& walls, const Params& p,
                               double resting, double h) {
  ContactSchedule& s = contacts.schedule;
  const double e = p.restitution;
  auto& geo = contacts.geometry;
  const auto& pairs = contacts.pairs;
  const bool discrete = p.solver == Solver::kDiscrete;
  const double inv_h = 1.0 / h;
  const bool warmed = !contacts.warm.empty();
  if (warmed) {
    // Contacts and warm values are both in candidate order: one merge.
    std::size_t w = 0;
    for (Contact& ct : geo) {
      while (w < contacts.warm.size() && contacts.warm[w].first < ct.candidate) ++w;
      ct.impulse = w < contacts.warm.size() && contacts.warm[w].first == ct.candidate ? contacts.warm[w].second : 0.0;
    }
  }
  // Islands or rounds: the same rule, so the same bits (the choice is speed).
  const bool try_islands = pairs.size() < kIslandsBelow && contacts.island_backoff == 0;
  if (contacts.island_backoff > 0) --contacts.island_backoff;
  contacts.by_islands = try_islands && build_islands(b.id, pairs, walls.blocks, kMaxIsland, contacts.islands, s.reserved);
  if (try_islands && !contacts.by_islands) contacts.island_backoff = kIslandBackoff;
  if (contacts.by_islands) {
    const ContactIslands& is = contacts.islands;
    contacts.rounds = is.depth;
    if (discrete) {
      // Bodies against a wall and in no contact: one pass does all there is.
      if (p.iterations > 0)
        for_blocks(is.lone_walls.size(), kBlock, [&](std::size_t w0, std::size_t w1, std::size_t) {
          for (std::size_t w = w0; w < w1; ++w) {
            bounce_walls(b, is.lone_walls[w], p.restitution, resting);
            stop_walls(b, is.lone_walls[w]);
          }
        });
      for_islands(is, [&](std::span<const std::uint32_t> cs, std::span<const std::uint32_t> ws) {
        solve_island(b, pairs, geo, warmed, p, resting, cs, ws);
      });
    } else {
      for_islands(is, [&](std::span<const std::uint32_t> cs, std::span<const std::uint32_t>) {
        push_island(b, pairs, geo, p, inv_h, cs);
      });
    }
  } else {
    order_contacts(b.id, contacts.pairs, s);
    contacts.rounds = static_cast<std::uint32_t>(s.rounds());
    if (discrete) {
      for_blocks(geo.size(), kBlock, [&](std::size_t c0, std::size_t c1, std::size_t) {
        for (std::size_t c = c0; c < c1; ++c) classify(geo[c]);
      });
      // One pass: walls (each touches one body: parallel), then the contacts
      // round by round. Returns how many acted.
      auto pass = [&](auto&& wall, auto&& contact) {
        std::atomic<std::uint64_t> wall_hits{0};
        for_blocks(walls.blocks.size(), 1, [&](std::size_t blk, std::size_t, std::size_t) {
          std::uint64_t count = 0;
          for (std::uint32_t entry : walls.blocks[blk]) count += wall(entry);
          if (count) wall_hits.fetch_add(count, std::memory_order_relaxed);
        });
        return wall_hits.load() + for_rounds(s, [&](std::uint32_t c) { return contact(c) ? 1u : 0u; });
      };
      for (int it = 0; it < p.iterations; ++it) {
        if (pass([&](std::uint32_t entry) { return bounce_walls(b, entry, e, resting); },
                 [&](std::uint32_t c) { return impact(b, pairs[c], geo[c], e, resting); }) == 0)
          break;
      }
      if (warmed) {
        for_rounds(s, [&](std::uint32_t c) {
          warm_start(b, pairs[c], geo[c]);
          return 0u;
        });
      }
      for (int it = 0; it < p.iterations; ++it) {
        // Walls first: a wall must take its share before the contacts above
        // it look at their velocity, or a warm-started contact would see
        // separation and let go.
        if (pass([&](std::uint32_t entry) { return stop_walls(b, entry); },
                 [&](std::uint32_t c) { return solve_velocity(b, pairs[c], geo[c], 0.0); }) == 0)
          break;
      }
    } else {
      for (int it = 0; it < p.iterations; ++it) {
        const std::uint64_t moved =
            for_rounds(s, [&](std::uint32_t c) { return push_apart(b, pairs[c], geo[c], inv_h) ? 1u : 0u; });
        if (moved == 0) break;
      }
    }
  }
  if (discrete) {
    // Keep what resting contacts carried, for the next substep; impacts
    // separate and start afresh.
    contacts.warm.clear();
    for (std::size_t c = 0; c < geo.size(); ++c) {
      Contact& ct = geo[c];
      ct.impulse = b.m[pairs[c].b] * (b.m[pairs[c].a] / (b.m[pairs[c].a] + b.m[pairs[c].b])) * (ct.accum + ct.bounce);
      if (ct.state == kTouching && ct.accum > 0.0) {
        contacts.warm.emplace_back(ct.candidate, ct.accum);
      }
    }
  }
  std::uint64_t collisions = 0;
  for (const Contact& ct : geo) collisions += ct.state == kCollided;
  return collisions;
}

WarmByIds save_warm(const BodyStore& b, const PairBlocks& pairs, const Contacts& contacts) {
  WarmByIds saved;
  if (contacts.warm.empty()) return saved;
  std::vector<std::size_t> first(pairs.blocks.size() + 1, 0);
  for (std::size_t k = 0; k < pairs.blocks.size(); ++k) first[k + 1] = first[k] + pairs.blocks[k].size();
  saved.reserve(contacts.warm.size());
  for (const auto& [cand, value] : contacts.warm) {
    const std::size_t blk = static_cast<std::size_t>(std::upper_bound(first.begin(), first.end(), cand) - first.begin()) - 1;
    const Pair p = pairs.blocks[blk][cand - first[blk]];
    saved.emplace_back(std::uint64_t{b.id[p.a]} << 32 | b.id[p.b], value);
  }
  std::sort(saved.begin(), saved.end());
  return saved;
}

void restore_warm(const BodyStore& b, const PairBlocks& pairs, const WarmByIds& saved, Contacts& contacts) {
  contacts.warm.clear();
  if (saved.empty()) return;
  std::uint32_t cand = 0;
  for (const auto& block : pairs.blocks) {
    for (const Pair p : block) {
      const std::uint64_t key = std::uint64_t{b.id[p.a]} << 32 | b.id[p.b];
      auto it = std::lower_bound(saved.begin(), saved.end(), std::make_pair(key, 0.0));
      if (it != saved.end() && it->first == key) {
        contacts.warm.emplace_back(cand, it->second);
      }
      ++cand;
    }
  }
}

void correct_positions(BodyStore& b, Contacts& contacts, const Params& p) {
  const auto& pairs = contacts.pairs;
  auto& geo = contacts.geometry;
  const Bounds* box = p.bounds.walled ? &p.bounds : nullptr;
  if (contacts.by_islands) {
    for_islands(contacts.islands, [&](std::span<const std::uint32_t> cs, std::span<const std::uint32_t>) {
      for (int it = 0; it < kPositionPasses; ++it) {
        bool moved = false;
        for (const std::uint32_t c : cs) moved |= apply_position(b, pairs[c], geo[c], kPositionCorrection, box) > 0.0;
        if (!moved) break;
      }
    });
    return;
  }
  for (int it = 0; it < kPositionPasses; ++it) {
    const std::uint64_t moved = for_rounds(contacts.schedule, [&](std::uint32_t c) {
      return apply_position(b, pairs[c], geo[c], kPositionCorrection, box) > 0.0;
    });
    if (moved == 0) break;
  }
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
    CollisionEvent ev;
    ev.a = b.id[p.a];
    ev.b = b.id[p.b];
    ev.point = {ct.px, ct.py};
    ev.impulse = {ct.impulse * ct.nx, ct.impulse * ct.ny};
    ev.substep = substep;
    events.push_back(ev);
  }
  return dropped;
}

}  // namespace carom::detail
