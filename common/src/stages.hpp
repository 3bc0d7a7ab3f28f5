#pragma once
// The stage functions World::step calls, one file each. Every stage runs inside
// the World's task arena and writes only into slots fixed before it starts.

#include <bit>
#include <cmath>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "body_store.hpp"
#include "broad_phase.hpp"
#include "carom/params.hpp"
#include "carom/stats.hpp"

namespace carom::detail {

/// One contact of a substep: a candidate pair whose gap is below the
/// speculative distance (discrete) or that overlaps (Verlet). Its bodies are in
/// the parallel Contacts::pairs array, and what its velocity passes have
/// accumulated in Contacts::accum. Its geometry lives in ContactStore, an
/// array a field; a ContactRef is one contact's fields there.
struct ContactRef {
  double& nx;              // unit normal from a to b at detection
  double& ny;
  double& sep;             // gap at detection, |b - a| - (r_a + r_b), m (< 0: overlap); in relax: after the move
  double& reach;           // r_a + r_b, m (relax measures the gap with it)
  double& share_a;         // m_b / (m_a + m_b): a's share of a relative velocity change
  double& share_b;         // m_a / (m_a + m_b)
  double& bounce;          // normal velocity change of the impacts this substep (m/s); Verlet: approach before the push
  std::uint32_t& va;       // a's and b's slots in the solver's copy of the velocities (Contacts::slot_of)
  std::uint32_t& vb;
};
/// Where ContactStore's arrays are (valid until it is resized): the lanes
/// load a field of four consecutive contacts in one load, where a contact
/// in a cache line of its own had to be transposed out of four lines (the
/// 10k pile 1.09x on one thread and on two; the same bits).
struct ContactFields {
  double *nx, *ny, *sep, *reach, *share_a, *share_b, *bounce;
  std::uint32_t *va, *vb;
  ContactRef operator[](std::size_t k) const {
    return {nx[k], ny[k], sep[k], reach[k], share_a[k], share_b[k], bounce[k], va[k], vb[k]};
  }
};
/// One contact's fields copied out of the store (what a reader keeps).
struct Contact {
  double nx = 0, ny = 0, sep = 0, reach = 0, share_a = 0, share_b = 0, bounce = 0;
  std::uint32_t va = 0, vb = 0;
};
/// The contacts' geometry, structure of arrays (ContactRef says what each is).
struct ContactStore {
  std::vector<double> nx, ny, sep, reach, share_a, share_b, bounce;
  std::vector<std::uint32_t> va, vb;
  std::size_t size() const { return nx.size(); }
  /// Calls f on each of the arrays.
  template <class F>
  void each(F&& f) {
    f(nx), f(ny), f(sep), f(reach), f(share_a), f(share_b), f(bounce), f(va), f(vb);
  }
  void resize(std::size_t n) {
    each([n](auto& v) { v.resize(n); });
  }
  void release() {
    each([](auto& v) { std::remove_reference_t<decltype(v)>().swap(v); });
  }
  ContactFields data() {
    return {nx.data(), ny.data(), sep.data(), reach.data(), share_a.data(), share_b.data(), bounce.data(), va.data(), vb.data()};
  }
  ContactRef operator[](std::size_t k) { return data()[k]; }
  Contact value(std::size_t k) const {
    return {nx[k], ny[k], sep[k], reach[k], share_a[k], share_b[k], bounce[k], va[k], vb[k]};
  }
};

/// A pair overlapping deeper than this share of r_a + r_b (0.05 r for equal
/// radii) gets a stiffer soft spring (deep_softness in resolve.cpp).
inline constexpr double kStiffFrom = 0.025;

/// The candidate pairs in colour order: candidates that share a body have
/// different colours, so the contacts of one colour can be solved in parallel
/// in any order with the same bits. Colours are assigned greedily in candidate
/// order (the first colour free at both bodies), a function of ids and
/// positions only; a pair that finds all kColours - 1 colours taken goes to the
/// last colour, which is solved sequentially in candidate order.
inline constexpr std::uint32_t kColours = 64;
/// The greedy rule of both colourings: pair `p` takes the first of the
/// kColours - 1 colours that neither of its bodies has yet (marking it taken
/// at both), else the last colour, whose pairs are solved in order on one
/// thread.
inline std::uint32_t take_colour(std::uint64_t* used, Pair p) {
  constexpr std::uint64_t kNormal = (std::uint64_t{1} << (kColours - 1)) - 1;
  const std::uint64_t free = ~(used[p.a] | used[p.b]) & kNormal;
  if (free == 0) return kColours - 1;
  const auto c = static_cast<std::uint32_t>(std::countr_zero(free));
  used[p.a] |= std::uint64_t{1} << c;
  used[p.b] |= std::uint64_t{1} << c;
  return c;
}
/// From this many contacts in a substep, the threads share the colours of the
/// velocity passes among them (run_passes in resolve.cpp); below, the colours
/// are small (the default world: 6 800 contacts in 10 colours of at most
/// 1 300), and threads waiting for each other between them cost more than
/// one thread doing all (sharing from 2 048: the default world 0.964x on 2
/// threads, 5 rounds, 2026-11-28).
inline constexpr std::size_t kSharedPassesFrom = 8192;
///
/// Where no body carried load at the rebuild (a gas: contacts are a few
/// percent of the candidates and none lasts), the list is not coloured
/// (`per_contact`): each substep's contacts are coloured instead, by the same
/// greedy rule in candidate order (colour_contacts), and written in colour
/// order. Either way the colours are a function of the candidates and the
/// positions, so of what a saved world carries.
struct Colouring {
  std::vector<std::uint32_t> begin;   // candidate index where colour k starts; size colours + 1
  std::vector<std::uint32_t> block_begin;  // first candidate block of colour k; size colours + 1
  std::vector<std::uint64_t> used;    // scratch: per body, the colours taken
  std::vector<std::uint8_t> colour;   // scratch: per candidate
  bool per_contact = false;           // the list is in search order; collide colours the contacts
  std::uint32_t colours() const { return begin.empty() ? 0 : static_cast<std::uint32_t>(begin.size() - 1); }
};
/// Reorders `pairs` into colour order (blocks of one colour each) and fills
/// `out`. The greedy colouring is sequential, the reordering parallel; with
/// `low_memory` (a large world) the list is moved block by block instead, so
/// it is never held twice. Called when the pair list is rebuilt.
void colour_pairs(std::size_t bodies, PairBlocks& pairs, Colouring& out, bool low_memory = false);
/// Leaves `pairs` in search order, one "colour" of all (`out.per_contact`):
/// collide colours each substep's contacts instead.
void leave_uncoloured(const PairBlocks& pairs, Colouring& out);

/// A body within the speculative distance of a wall: entry = storage index <<
/// 2 | wall (0 min x, 1 max x, 2 min y, 3 max y).
struct WallContact {
  std::uint32_t entry = 0;
  std::uint32_t slot = 0;      // the body's slot in the solver's copy of the velocities (Contacts::slot_of)
  double sep = 0;              // gap to the wall at detection, m; in relax: after the move
  double accum = 0;            // as Contacts::accum
  double bounce = 0;           // as ContactRef::bounce
};

/// The wall contacts of a substep, in per-block lists (block k holds bodies
/// [k kWallBlock, (k+1) kWallBlock)), each sorted by entry; `last` holds the
/// previous substep's, whose accumulated values warm-start these.
struct WallContacts {
  std::vector<std::vector<WallContact>> blocks, last;
  bool warm = false;  // `last` is valid for these storage indices
};
/// Bodies per block of WallContacts.
inline constexpr std::size_t kWallBlock = 2048;

/// The contacts of one substep in colour order (where the list is coloured,
/// that is candidate order), plus scratch.
struct Contacts {
  std::vector<Pair> pairs;
  ContactStore geometry;
  std::vector<double> accum;             // accumulated relative normal velocity change of the velocity passes, >= 0 (m/s)
  std::vector<std::uint32_t> candidate;  // index in the candidate pair list (warm starting)
  std::vector<std::uint8_t> collided;    // an impact this substep (discrete) / pushed apart (Verlet)
  // Per body: its slot in the solver's copy of the velocities, the broad
  // phase's order at the last rebuild (near bodies in near slots, in the order
  // the contacts of each colour come in: a thread's share of every colour
  // touches its own stretch of the copy). Made at a rebuild only where the
  // passes may be shared (more than one thread, enough candidates); empty:
  // slot = storage index.
  std::vector<std::uint32_t> slot_of;
  // This substep's contacts (ContactRef::va, vb) and wall contacts use slot_of:
  // where the velocity passes are shared among threads (kSharedPassesFrom);
  // else the slots are the storage indices.
  bool slotted = false;
  // A large world's narrow phase reads the bodies in slot order (see
  // collide): each candidate's two slots, block by block, for the pair list
  // `base` (PairBlocks::base; its first `blocks` blocks, a repair's appended
  // after), each slot's body, and the bodies' radii and masses (made with
  // the list: an edit of those rebuilds it) and positions (each collide)
  // at their slots.
  struct SlotInputs {
    std::uint64_t base = 0;
    std::size_t blocks = 0;
    std::vector<std::vector<Pair>> pairs;
    std::vector<std::uint32_t> body;
    std::vector<double> x, y, r, m;
  } slot_inputs;
  std::vector<Vec2> point;               // radius-weighted contact point at detection (events)
  std::vector<std::uint32_t> colour_begin;  // contact index where colour k starts; size colours + 1
  std::vector<std::uint32_t> block_count;   // scratch: first contact of each candidate block
  struct Block {                            // scratch: one candidate block's contacts
    std::vector<std::uint32_t> hits;        // offsets in the block of its candidates that are contacts
    std::vector<std::uint32_t> last_hits;   // the hits of the collide before (refresh, see collide)
    std::size_t deep = 0;
  };
  std::vector<Block> block_contacts;
  // Where the list is not coloured (Colouring::per_contact): the place of
  // each contact, taken in candidate order, in this substep's colour order
  // (empty: contacts are in candidate order), and colour_contacts' scratch.
  std::vector<std::uint32_t> order;
  std::vector<std::uint64_t> colour_used;  // per body, all zero between calls
  std::vector<std::uint8_t> hit_colour;
  std::vector<Pair> hit_pair;  // the contacts' pairs in candidate order (colour_contacts)
  std::size_t deep = 0;  // contacts overlapping deeper than kStiffFrom of their reach at detection
  // What the last collide into these contacts wrote them from: the pair
  // list (PairBlocks::generation) and the slots (null: storage indices).
  std::uint64_t written_from = 0;
  const std::uint32_t* written_slots = nullptr;
  int push_passes = 0;  // Verlet: position passes the last push_contacts made
  std::vector<std::uint8_t> fired;  // scratch: per body, 1 + the impact pass that last changed it (0: none)
  // Scratch of the impact passes after the first: each body's contacts
  // (by_body[by_body_start[i], by_body_start[i + 1]), in contact order), the
  // contacts to look at (bits), the bodies changed last pass and this one.
  std::vector<std::uint32_t> by_body_start, by_body, by_body_fill;
  bool by_body_current = false;  // the index is of these contacts (a refresh keeps it)
  std::vector<std::uint32_t> marked;  // scratch: a colour's contacts to look at in an impact pass
  std::vector<std::uint64_t> todo, todo_next;
  // The same as bytes, where the passes are shared among threads (a mark is
  // a plain store, not an atomic OR of a word two threads may write).
  std::vector<std::uint8_t> look_now, look_next;
  // Scratch: the velocities the solver works on where contacts are many,
  // (vx, vy) of the body at slot s at [2s, 2s + 1] (slots(); storage indices
  // when it is empty; resolve.cpp, with_velocities).
  std::vector<double> velocity;
  std::vector<std::vector<std::pair<std::uint32_t, double>>> block_warm;  // scratch: restore_warm's per candidate block
  // Warm starting: what last substep's contacts carried, by candidate index,
  // in candidate order. Either the contacts' own `candidate` and `accum`
  // (warm_in_contacts: what relax_contacts leaves, so nothing is copied) or
  // `warm_candidate` and `warm_value`: after a rebuild, those that carried
  // load (restore_warm; sparse, because a gas has almost none). collide
  // merges them into the next contacts, the contacts' own set aside in
  // warm_candidate and warm_value as the next are written, and empties them.
  bool warm_in_contacts = false;
  std::vector<std::uint32_t> warm_candidate;
  std::vector<double> warm_value;
  /// Calls fn(candidate index, value) for every warm value > 0, in candidate order.
  template <class Fn>
  void for_each_warm(Fn&& fn) const {
    if (warm_in_contacts && !order.empty()) {  // contacts in colour order: visit them in candidate order
      for (const std::uint32_t k : order)
        if (accum[k] > 0.0) fn(candidate[k], accum[k]);
      return;
    }
    const std::vector<std::uint32_t>& cands = warm_in_contacts ? candidate : warm_candidate;
    const std::vector<double>& values = warm_in_contacts ? accum : warm_value;
    for (std::size_t k = 0; k < cands.size(); ++k)
      if (values[k] > 0.0) fn(cands[k], values[k]);
  }
  /// Contacts in a colour order of their own (`order`) that carry warm
  /// values: those that carry, taken in candidate order into warm_candidate
  /// and warm_value (for_each_warm walks them through `order`).
  void gather_warm() {
    warm_candidate.clear();
    warm_value.clear();
    for_each_warm([&](std::uint32_t cand, double value) {
      warm_candidate.push_back(cand);
      warm_value.push_back(value);
    });
  }
  /// How many warm values for_each_warm may call fn with, at most.
  std::size_t warm_bound() const { return warm_in_contacts ? candidate.size() : warm_candidate.size(); }
  /// No warm values: the next substep starts cold.
  void forget_warm() {
    warm_in_contacts = false;
    warm_candidate.clear();
    warm_value.clear();
  }
  std::size_t size() const { return pairs.size(); }
  /// Each body's slot in the solver's velocity copy this substep, or empty
  /// where the slots are the storage indices (not slotted).
  std::span<const std::uint32_t> slots() const {
    return slotted ? std::span<const std::uint32_t>(slot_of) : std::span<const std::uint32_t>{};
  }
  /// Gives back the per-contact arrays and the warm values: a large world
  /// calls this before rebuilding its pair list (after warm_table has read the
  /// warm values, before restore_warm), the moment memory peaks.
  void release() {
    warm_in_contacts = false;
    std::vector<Pair>().swap(pairs);
    geometry.release();
    std::vector<double>().swap(accum);
    std::vector<std::uint32_t>().swap(candidate);
    std::vector<std::uint32_t>().swap(warm_candidate);
    std::vector<double>().swap(warm_value);
    std::vector<std::uint8_t>().swap(collided);
    std::vector<Vec2>().swap(point);
    std::vector<Block>().swap(block_contacts);
    std::vector<std::uint32_t>().swap(order);
    slot_inputs = {};
    by_body_current = false;
    colour_begin.clear();
  }
  std::uint32_t colours() const { return colour_begin.empty() ? 0 : static_cast<std::uint32_t>(colour_begin.size() - 1); }
  /// The colours that hold contacts (a repaired list's overflow colour comes
  /// after empty ones).
  std::uint32_t rounds() const {
    std::uint32_t held = 0;
    for (std::uint32_t c = 0; c < colours(); ++c) held += colour_begin[c + 1] != colour_begin[c] ? 1 : 0;
    return held;
  }
};

/// Warm-start values keyed by (lower id << 32 | higher id), sorted by key.
using WarmByIds = std::vector<std::pair<std::uint64_t, double>>;
/// The warm values of the candidate list (`pairs`) by id pair: what a saved
/// world carries (a rebuild uses warm_table instead, no sort).
WarmByIds save_warm(const BodyStore& b, const PairBlocks& pairs, const Contacts& contacts);
/// Warm values by storage index pair, for the trip across a rebuild: the
/// entries (higher index, value) of lower body a are entry[start[a],
/// start[a + 1]), in no particular order (each pair is there once).
struct WarmTable {
  std::vector<std::uint32_t> start;
  std::vector<std::pair<std::uint32_t, double>> entry;
};
/// Before a rebuild caused by motion (storage indices unchanged): the warm
/// values of the current candidate list. No sort: one pass over what carries
/// load, one over the bodies.
WarmTable warm_table(std::size_t bodies, const PairBlocks& pairs, const Contacts& contacts);
/// The same from values by id pair (a restored world's).
WarmTable warm_table(const BodyStore& b, const WarmByIds& saved);
/// After the rebuild: warm values re-indexed by the new candidate list
/// (blocks in parallel, joined in order).
void restore_warm(const PairBlocks& pairs, const WarmTable& table, Contacts& contacts);

/// The soft contact of Box2D v3's soft step, for a substep of length h: a
/// spring of `share` of the substep rate (hertz = share / h) with damping
/// ratio `zeta`, as the three numbers a pass uses, and the spring itself (a
/// deep pair's stiffer one is made from it: deep_softness in resolve.cpp).
struct Softness {
  double bias_rate = 0;      // 1/s
  double mass_scale = 1;
  double impulse_scale = 0;
  double h_omega = 0;        // h times the angular frequency: 2 pi share
  double two_zeta = 0;       // twice the damping ratio
};
Softness make_softness(double share, double zeta, double h);

/// What the discrete passes of one substep need besides the contacts.
struct SolveContext {
  double h = 0, inv_h = 0;
  double restitution = 1;
  double resting = 0;         // approach speeds at or below this do not bounce (m/s)
  double cascade_resting = 0;  // the same for impact passes after the first (kCascadeResting)
  // A speculative contact that carries nothing and approaches faster than
  // this when a soft pass reaches it is an impact the impact passes did not
  // see: the soft pass leaves it to the next substep's (soft_accum). The
  // resting speed in an elastic world (e = 1, whose energy is exact);
  // infinite below, where the soft pass takes the blow as Box2D does.
  double unseen_impact = 0;
  double max_push = 0;        // fastest the soft bias pushes overlapping bodies apart (m/s)
  Softness pair_soft, wall_soft;
  bool stiffen_deep = false;  // deep pairs get a stiffer spring this substep (set by solve_contacts)
  Bounds bounds;
  int iterations = 1;    // soft passes
  int relax_passes = 1;  // relax passes
};

/// Restitution applies to approach speeds above this; slower contacts are
/// resting and inelastic (else gravity's per-substep speed would bounce
/// forever). One step of free fall, |g| dt; 0 without gravity, so a gas
/// keeps every collision elastic.
inline double resting_speed(Vec2 gravity, double dt) { return std::sqrt(dot(gravity, gravity)) * dt; }

/// Where restitution is below 1, the impact passes after the first (a blow
/// carried down a pile, contact by contact) follow an approach as an impact
/// only while it is faster than this many resting speeds; a slower one is
/// left to the soft passes, which take a whole blow as Box2D does. At e 0.5
/// each contact down a column passes on 3/4 of the speed, so a 5 m/s landing
/// is followed for 8 contacts instead of 16. Elastic worlds (e = 1) keep
/// every impact: their energy is exact. Measured 2026-11-28 (docs/
/// architecture.md, "Impacts"): the 10k pile 1.12-1.22x, the default world
/// 1.34x, with the same overlap and settling.
inline constexpr double kCascadeResting = 4.0;

/// Velocity half of a substep: v <- v * damping + g h (nothing where that
/// is v: no gravity, no damping; then -0 stays -0). Also returns the
/// largest squared distance of any body from (xb, yb), the anchors the pair
/// list was built at (PairAnchors; one pass over the bodies serves both),
/// each multiplied by scale[i] unless `scale` is empty
/// (PairAnchors::reach_scale); 0 when xb is empty (Verlet measures after its
/// predict instead).
double integrate_velocities(BodyStore& b, Vec2 gravity, double damping, double h, std::span<const float> xb,
                            std::span<const float> yb, std::span<const float> scale = {});

/// Discrete solver: x <- x + v h, then walls as a backstop (a body the
/// contacts did not stop is clamped to the wall and its normal velocity
/// reflected with restitution above `resting`). Returns what
/// integrate_velocities would measure next (the positions no longer move
/// before it), in the same pass: 0 when xb is empty.
double integrate_positions(BodyStore& b, const Params& p, double h, double resting, std::span<const float> xb = {},
                           std::span<const float> yb = {}, std::span<const float> scale = {});

/// Verlet predict: keep (px, py) = x, then x <- x + v h. Returns as above.
double predict_positions(BodyStore& b, double h, std::span<double> px, std::span<double> py,
                         std::span<const float> xb, std::span<const float> yb, std::span<const float> scale = {});

/// Verlet finish: v <- (x - previous x) / h, the pushes' share of it at most
/// `max_push` (m/s); walls clamp, and on a clamped
/// axis the velocity is the one the body brought, reflected with restitution
/// above `resting` (stopped below).
void finish_verlet(BodyStore& b, const Params& p, double h, double resting, double max_push, std::span<const double> px,
                   std::span<const double> py);

/// Verlet's substep start, for collide: the positions before the prediction
/// (the normals push_contacts pushes along) and the velocities.
struct VerletStart {
  const double* px;
  const double* py;
  const double* vx;
  const double* vy;
};
/// Whether collide leaves out the speculative pairs that miss the substep
/// (moving along their normal faster than the resting speed and not meeting
/// within it): a list left uncoloured (a gas: Colouring::per_contact), not
/// Verlet's, in an elastic world (the world passes a resting speed >= 0,
/// and -1 below e = 1). In an elastic world such a pair does nothing in the
/// substep unless an impact or a push turns it, and then the next
/// substep's impact pass takes it whole. Below e = 1 that bounce, where a
/// contact's soft passes would have taken the blow, left the 10k pile
/// (a gas while it falls) 10-500 times the kinetic energy at step 600 (it
/// settled 200 steps later).
inline bool leaves_misses(const Colouring& colouring, const VerletStart* start, double resting) {
  return colouring.per_contact && start == nullptr && resting >= 0.0;
}

/// Narrow phase: the candidate pairs whose gap is below `speculative` (0:
/// those that overlap), with their normals, gaps, mass shares and contact
/// points (only with `points`: for events), in colour order (candidate order
/// within a colour), and their colour ranges. Returns how many. With `start`
/// (Verlet), only what the push and restitution read: each normal from the
/// positions at `start` (at detection where the pair coincided there), the
/// approach along it (`bounce`), the mass shares, the pair and the point.
/// `same_radius` (> 0): every body has this radius, so the test that finds
/// the contacts among the candidates does not load the radii. Where
/// leaves_misses (`resting` >= 0, the resting speed in m/s; -1: never), the
/// pairs apart that miss the substep `h` are left out: it reads the
/// velocities.
std::uint64_t collide(const BodyStore& b, const PairBlocks& candidates, const Colouring& colouring,
                      double speculative, bool points, Contacts& contacts, const VerletStart* start = nullptr,
                      double same_radius = 0.0, double resting = -1.0, double h = 0.0);

/// The warm values of contacts `ahead` made by collide while `from`, the
/// substep before's, were still being relaxed (ahead carried no warm values
/// then, so each starts at 0): each contact of `ahead` takes what `from`'s
/// contact of the same candidate carries, as collide would have merged it.
/// `from`'s warm values are then used up.
void take_warm(Contacts& from, Contacts& ahead);

/// Narrow phase, walls: every body within `speculative` of a wall of `box`
/// (nothing when the box is unbounded). Last substep's list becomes `last`.
void collide_walls(const BodyStore& b, const Bounds& box, double speculative, WallContacts& walls,
                   std::span<const std::uint32_t> slot_of = {});

/// Discrete, before integrate_positions: impacts (each pair or wall contact
/// approaching faster than the resting speed and meeting within the substep
/// collides as an isolated pair would, with restitution; passes repeat until
/// none fires, at most max(iterations, 16)), then warm starting and
/// `iterations` soft passes with bias (Box2D v3's soft step). Walls first, then
/// colour by colour. Returns the number of pair contacts that collided.
std::uint64_t solve_contacts(BodyStore& b, Contacts& contacts, WallContacts& walls, const SolveContext& ctx);

/// Whether the discrete solver may take four contacts (or candidates, or
/// bodies) at a time in AVX2 lanes, where the processor has them (the
/// default): the velocity passes (warm start, soft, relax), the impact
/// passes' test, the narrow phase's distance test and its writing of the
/// contacts, the wall test, the move and the distance from the anchors. Lanes and
/// one at a time give the same bits; tests switch the lanes off to check
/// that. Call between steps only.
void allow_simd(bool allowed);
/// Whether the lanes run now.
bool simd_in_use();
/// Whether the contact passes may work on the solver's own copy of the
/// velocities, a body's two components side by side, where contacts are as
/// many as the bodies or more (the default); and how many times they have
/// since the program started. Same bits either way; tests check that. Call
/// between steps only.
void allow_velocity_copy(bool allowed);
std::uint64_t velocity_copies();
/// The first impact pass's impacts from which the later impact passes are
/// shared among the threads, where the velocity passes are (resolve.cpp,
/// ImpactPass::shared); returns the last value. How many substeps have
/// shared them since the program started. Same bits either way; tests check
/// that. Call between steps only.
std::size_t set_shared_impacts_from(std::size_t impacts);
std::uint64_t shared_impact_passes();
/// How many substeps' contacts were made ahead, while the substep before
/// relaxed (take_warm), since the program started: with `per_contact`, those
/// that took their warm values from contacts in a colour order of their own
/// (a list coloured per contact), else those from contacts in candidate
/// order; for tests.
std::uint64_t contacts_made_ahead(bool per_contact);
/// Whether collide may refresh the contacts it wrote the substep before
/// (the same pair list and hits: only their normals, gaps and points written
/// again; the default), and how many times it has since the program
/// started. Same bits either way; tests check that. Call between steps only.
void allow_contact_refresh(bool allowed);
std::uint64_t contact_refreshes();
/// From how many bodies collide reads the bodies in slot order
/// (Contacts::SlotInputs; kSlotInputsFrom by default), returning the value
/// before, and how many collides have since the program started. Same bits
/// either way; tests check that. Call between steps only.
std::size_t set_slot_inputs_from(std::size_t bodies);
std::uint64_t slot_input_collides();
/// How many substeps have coloured their own contacts (a list left
/// uncoloured, Colouring::per_contact) since the program started; for tests.
std::uint64_t contact_colourings();
/// Whether the discrete solver may stiffen deep contacts (deep_softness in
/// resolve.cpp; the default), so tests can set a pile beside the one spring.
/// Call between steps only.
void allow_deep_stiffening(bool allowed);
/// Whether the discrete solver may make the impact cascade's index of each
/// body's contacts on another thread while the first impact pass runs, where
/// its passes run on the calling thread (the default), and how many times it
/// has since the program started. Same bits either way; tests check that.
/// Call between steps only.
void allow_index_beside(bool allowed);
std::uint64_t indexes_beside();
/// Whether World's step may make the next substep's repair of the pair list
/// on another thread, with the next contacts, while relax runs (the
/// default), and how many repairs it has made so since the program started.
/// Same bits either way; tests check that. Call between steps only.
void allow_repair_ahead(bool allowed);
std::uint64_t repairs_made_ahead();
/// Whether an elastic gas's narrow phase may leave out the speculative pairs
/// that miss the substep (leaves_misses; the default), so tests can check
/// the soft pass's rule for impacts it did not see on their own (a gas
/// whose list is coloured, where some bodies carry load, has them as
/// contacts). Call between steps only.
void allow_leaving_misses(bool allowed);
/// Tests: which arena World's step runs in where the world adapts its threads
/// (WorldConfig::adapt_threads): as measured (ThreadChoice, the default), its
/// threads and one thread by turns, step by step, or one thread always. Call
/// between steps only.
enum class ThreadTurns { kMeasured, kAlternate, kOne };
void set_thread_turns(ThreadTurns turns);

/// Discrete, after integrate_positions: `iterations` relax passes (the soft
/// bias's velocity taken out again, speculative contacts still holding), then
/// what each contact carries is kept to warm-start the next substep.
void relax_contacts(BodyStore& b, Contacts& contacts, WallContacts& walls, const SolveContext& ctx);

/// Verlet: `iterations` position passes pushing overlapping pairs apart along
/// their normal at the start of the substep (collide made it, with each
/// contact's approach speed: VerletStart), colour by colour; a wall holds a
/// body it clamps and the partner takes the whole push; more passes (up to
/// 32) while a pass finds a pair overlapping by more than half its smaller
/// radius (the count goes in contacts.push_passes).
std::uint64_t push_contacts(BodyStore& b, Contacts& contacts, const Bounds& bounds, int iterations);

/// Verlet, after finish_verlet: up to max(iterations, push passes) velocity passes that give
/// each pushed pair the normal velocity restitution gives it (-e times its
/// approach before the push, 0 below the resting speed), so the push-apart
/// adds no energy. With `events`, each pushed pair's whole change of normal
/// velocity then goes in its `bounce` (record_events reads it).
void restitute_contacts(BodyStore& b, Contacts& contacts, double restitution, double resting, int iterations,
                        bool events);

/// Appends the collisions of one substep to `events` in contact order, up to
/// `cap` in total. Returns how many did not fit.
std::uint64_t record_events(const BodyStore& b, const Contacts& contacts, std::uint32_t substep, std::size_t cap,
                            std::vector<CollisionEvent>& events);

/// Whether a body at (x, y) moving at (vx, vy) is within the coordinate and
/// speed limits (false when any is not finite): World::step removes the
/// others, so every state a world reaches is one its loader accepts.
inline bool within_limits(double x, double y, double vx, double vy) {
  return (std::abs(x) <= kMaxCoordinate) & (std::abs(y) <= kMaxCoordinate) & (std::abs(vx) <= kMaxSpeed) &
         (std::abs(vy) <= kMaxSpeed);
}

/// Kinetic energy and momentum, summed per fixed block then in block order.
/// Returns whether some body is past the coordinate or speed limits (or not
/// finite): the same pass over the bodies, so that World::step looks for
/// escapers only when there are some.
bool measure_energy(const BodyStore& b, StepStats& stats);

/// The state hash over bit patterns in id order.
std::uint64_t hash_state(const BodyStore& b);

}  // namespace carom::detail
