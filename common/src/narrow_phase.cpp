// Narrow phase: collide (pairs) and collide_walls.
//
// Reads:  positions, radii and masses; the coloured candidate pair list; the
//         warm values of the last substep.
// Writes: the contacts of this substep (candidate pairs whose gap is below the
//         speculative distance, with the unit normal from the lower id to the
//         higher id, the gap, the mass shares, the radius-weighted contact
//         point and the warm value), colour by colour: in candidate order
//         where the list is coloured; where it was left uncoloured (a gas),
//         coloured here by the list's greedy rule in candidate order, and
//         written at their places in colour order (Verlet: only what its
//         push and restitution read, the normal from the substep's start);
//         the wall contacts (bodies within the speculative distance of a wall),
//         per block, in storage order.
//
// Speculative contacts (discrete): a pair a little apart is a contact too, so
// a resting pair stays a contact while the solver holds it at touching
// distance, and an approaching pair is stopped at the surface, not after it
// sinks in (Box2D's speculative margin). Verlet's contacts reach as far: a
// pair a push carries into overlap within the substep is pushed back in the
// same pass (without them its pushes stacked bodies).
//
// Two passes over the candidate blocks, each block in parallel: the first
// lists which of its candidates are contacts (AVX2 lanes run the distance
// test four at a time, with the same operations as one at a time), the
// second writes their contacts into the slots a prefix sum of the counts gave
// the block. So the contact list is the same for any thread count, and no
// contact is written twice (the lists joined by copying cost a tenth of a
// pile's step on two threads). Coincident centres get the normal (1, 0): a
// fixed choice.

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstddef>
#include <vector>

#include "parallel.hpp"
#include "stages.hpp"

namespace carom::detail {
namespace {

std::atomic<std::uint64_t> contact_colouring_runs{0};
std::atomic<std::uint64_t> made_ahead[2] = {0, 0};
std::atomic<bool> refresh_allowed{true};
// From this many bodies the narrow phase reads them in slot order
// (Contacts::SlotInputs, collide). Measured (2026-12-06, two worlds stepped
// by turns, 2 threads, the same bits): the 100k pile 1.118x over its
// settled steps 450-650 and 1.029x over its first 400, the 10k pile 0.965x
// (its positions gathered at every collide for few misses).
constexpr std::size_t kSlotInputsFrom = 65536;
std::atomic<std::size_t> slot_inputs_from{kSlotInputsFrom};
std::atomic<std::uint64_t> slot_input_runs{0};
std::atomic<std::uint64_t> refreshes{0};  // take_warm: from candidate order, from a colour order

// Where collide leaves out the speculative pairs that miss the substep (an
// elastic gas's list: leaves_misses): the velocities it reads, the resting
// speed squared and the substep. Null: every pair within reach is a contact.
struct Misses {
  const double* vx = nullptr;
  const double* vy = nullptr;
  double speed2 = 0.0;  // the square of the speed they move faster than (the resting speed)
  double h = 0.0;       // the substep (s)
};

// collide's test: the squared distance below the squared reach plus the
// speculative distance. With `misses`, a pair apart (beyond r_a + r_b) is
// not a contact where it moves along its normal faster than the resting
// speed and does not meet within the substep: with u = (v_b - v_a).(x_b -
// x_a) / d and the gap g = d - (r_a + r_b), u^2 > speed^2 and g + u h > 0,
// multiplied through by d (c = u d, c^2 > speed^2 d^2 and g d + c h > 0;
// one square root). In an elastic gas such a pair does nothing in the
// substep: it parts, or it approaches and the soft pass leaves an approach
// faster than the resting speed to the impacts (SolveContext::
// unseen_impact). It meets within the substep only where an impact turns
// it, and then the next substep's impact pass takes it. At the 1M gas's
// step 20, 36 000 of the 77 000 pairs within reach part and 19 000 more
// approach without meeting. Bodies at rest on each other move slower than
// the resting speed and stay.
inline bool is_contact(const double* x, const double* y, const double* r, Pair p, double speculative,
                       Misses misses) {
  const double dx = x[p.b] - x[p.a], dy = y[p.b] - y[p.a];
  const double reach = r[p.a] + r[p.b];
  const double near = reach + speculative;
  const double d2 = dx * dx + dy * dy;
  if (!(d2 < near * near)) return false;
  if (misses.vx == nullptr || d2 <= reach * reach) return true;
  const double c = (misses.vx[p.b] - misses.vx[p.a]) * dx + (misses.vy[p.b] - misses.vy[p.a]) * dy;
  const double d = std::sqrt(d2);
  return !(c * c > misses.speed2 * d2 && (d2 - reach * d) + c * misses.h > 0.0);
}

// Lanes of v at the first (second) bodies of four pairs.
[[gnu::target("avx2"), gnu::always_inline]] inline __m256d lanes_a(const double* v, const Pair* p) {
  return _mm256_setr_pd(v[p[0].a], v[p[1].a], v[p[2].a], v[p[3].a]);
}
[[gnu::target("avx2"), gnu::always_inline]] inline __m256d lanes_b(const double* v, const Pair* p) {
  return _mm256_setr_pd(v[p[0].b], v[p[1].b], v[p[2].b], v[p[3].b]);
}

// Appends to `hits` the offset k of each candidate of the block, in order,
// that is a contact (is_contact): four at a time in lanes, with the same
// operations as one at a time, the last few one at a time. Where every body
// has radius `same` (> 0), r_a + r_b + speculative is one value: the radii
// are not loaded (two of the six loads of four candidates; the same bits).
[[gnu::target("avx2")]] void contact_candidates_avx2(const double* x, const double* y, const double* r,
                                                     const Pair* block, std::size_t size, double speculative,
                                                     double same, Misses misses, std::vector<std::uint32_t>& hits) {
  const __m256d spec = _mm256_set1_pd(speculative);
  const __m256d same_reach = _mm256_set1_pd(same + same);
  const __m256d same_near = _mm256_add_pd(same_reach, spec);
  const __m256d zero = _mm256_setzero_pd(), speed2 = _mm256_set1_pd(misses.speed2), h = _mm256_set1_pd(misses.h);
  std::size_t k = 0;
  for (; k + 4 <= size; k += 4) {
    const Pair* p = block + k;
    const __m256d dx = _mm256_sub_pd(lanes_b(x, p), lanes_a(x, p));
    const __m256d dy = _mm256_sub_pd(lanes_b(y, p), lanes_a(y, p));
    const __m256d reach = same > 0.0 ? same_reach : _mm256_add_pd(lanes_a(r, p), lanes_b(r, p));
    const __m256d near = same > 0.0 ? same_near : _mm256_add_pd(reach, spec);
    const __m256d d2 = _mm256_add_pd(_mm256_mul_pd(dx, dx), _mm256_mul_pd(dy, dy));
    __m256d hit = _mm256_cmp_pd(d2, _mm256_mul_pd(near, near), _CMP_LT_OQ);
    if (misses.vx != nullptr && _mm256_movemask_pd(hit) != 0) {
      const __m256d apart = _mm256_and_pd(hit, _mm256_cmp_pd(d2, _mm256_mul_pd(reach, reach), _CMP_GT_OQ));
      if (_mm256_movemask_pd(apart) != 0) {
        const __m256d c = _mm256_add_pd(
            _mm256_mul_pd(_mm256_sub_pd(lanes_b(misses.vx, p), lanes_a(misses.vx, p)), dx),
            _mm256_mul_pd(_mm256_sub_pd(lanes_b(misses.vy, p), lanes_a(misses.vy, p)), dy));
        const __m256d d = _mm256_sqrt_pd(d2);
        const __m256d miss = _mm256_and_pd(
            _mm256_cmp_pd(_mm256_mul_pd(c, c), _mm256_mul_pd(speed2, d2), _CMP_GT_OQ),
            _mm256_cmp_pd(_mm256_add_pd(_mm256_sub_pd(d2, _mm256_mul_pd(reach, d)), _mm256_mul_pd(c, h)), zero,
                          _CMP_GT_OQ));
        hit = _mm256_andnot_pd(_mm256_and_pd(apart, miss), hit);
      }
    }
    for (int bits = _mm256_movemask_pd(hit); bits != 0; bits &= bits - 1)
      hits.push_back(static_cast<std::uint32_t>(k) + static_cast<std::uint32_t>(std::countr_zero(static_cast<unsigned>(bits))));
  }
  _mm256_zeroupper();  // the code after the lanes is not AVX (as in resolve.cpp's run_avx2)
  for (; k < size; ++k)
    if (is_contact(x, y, r, block[k], speculative, misses)) hits.push_back(static_cast<std::uint32_t>(k));
}

// What collide's second pass reads of the bodies.
struct ContactInput {
  const double* x;
  const double* y;
  const double* r;
  const double* m;
  const std::uint32_t* slot;  // the solver's slots (Contacts::slotted), or null: storage indices
};

// Where a block's next contact goes, its place in the warm list, and its deep
// contacts so far.
struct WriteCursor {
  std::size_t at;
  std::size_t w;
  std::size_t deep;
  const std::uint32_t* place;  // the contact's place by `at` (Contacts::order), or null: `at` itself
  std::size_t to(std::size_t k) const { return place ? place[k] : k; }
};

// The warm value of candidate `cand` (the warm list is in candidate order and
// so are a block's contacts: the cursor only moves forward).
inline double warm_of(std::uint32_t cand, const std::uint32_t* warm_cand, const double* warm_value,
                      std::size_t warm_size, std::size_t& w) {
  while (w < warm_size && warm_cand[w] < cand) ++w;
  return w < warm_size && warm_cand[w] == cand ? warm_value[w] : 0.0;
}

// A contact's unit normal from a to b (coincident centres: (1, 0)), its gap
// and bounce (0), from the centres' offset (dx, dy) and `reach` (r_a + r_b);
// returns 1 where it overlaps deeper than kStiffFrom of its reach. For a
// contact written whole and one refreshed alike (so the same bits).
inline std::size_t set_normal_gap(double dx, double dy, double reach, const ContactRef& c) {
  const double d2 = dx * dx + dy * dy;
  double d = 0.0;
  if (d2 > 0.0) {
    d = std::sqrt(d2);
    c.nx = dx / d;
    c.ny = dy / d;
  } else {
    c.nx = 1.0;
    c.ny = 0.0;
  }
  c.sep = d - reach;
  c.bounce = 0.0;
  return c.sep < -kStiffFrom * reach ? 1 : 0;
}

// A contact's mass shares: a's share m_b / (m_a + m_b) of a relative
// velocity change, b's m_a / (m_a + m_b); equal masses share by exactly 1/2
// (m / 2m may not round to it).
inline void set_shares(double ma, double mb, const ContactRef& c) {
  if (ma == mb) {
    c.share_a = c.share_b = 0.5;
  } else {
    const double inv = 1.0 / (ma + mb);
    c.share_a = mb * inv;
    c.share_b = ma * inv;
  }
}

// The radius-weighted contact point of pair p.
inline Vec2 contact_point(const double* x, const double* y, const double* r, Pair p, double reach) {
  return {(r[p.b] * x[p.a] + r[p.a] * x[p.b]) / reach, (r[p.b] * y[p.a] + r[p.a] * y[p.b]) / reach};
}

// set_normal_gap in lanes (IEEE square root and division round in lanes as
// one at a time: the same bits); `deep` counts the deep lanes.
struct NormalGap {
  __m256d nx, ny, sep;
};
[[gnu::target("avx2"), gnu::always_inline]] inline NormalGap normal_gap(__m256d dx, __m256d dy, __m256d reach,
                                                                       std::size_t& deep) {
  const __m256d zero = _mm256_setzero_pd(), one = _mm256_set1_pd(1.0);
  const __m256d d2 = _mm256_add_pd(_mm256_mul_pd(dx, dx), _mm256_mul_pd(dy, dy));
  // Coincident centres (d2 = 0): d = 0 and the normal (1, 0).
  const __m256d apart = _mm256_cmp_pd(d2, zero, _CMP_GT_OQ);
  const __m256d d = _mm256_and_pd(_mm256_sqrt_pd(d2), apart);
  const NormalGap g{_mm256_blendv_pd(one, _mm256_div_pd(dx, d), apart),
                    _mm256_blendv_pd(zero, _mm256_div_pd(dy, d), apart), _mm256_sub_pd(d, reach)};
  const __m256d stiff = _mm256_mul_pd(_mm256_set1_pd(-kStiffFrom), reach);
  deep += static_cast<std::size_t>(
      std::popcount(static_cast<unsigned>(_mm256_movemask_pd(_mm256_cmp_pd(g.sep, stiff, _CMP_LT_OQ)))));
  return g;
}

// contact_point in lanes, stored at points[at[j]].
[[gnu::target("avx2"), gnu::always_inline]] inline void contact_points(__m256d xa, __m256d xb, __m256d ya, __m256d yb,
                                                                      __m256d ra, __m256d rb, __m256d reach,
                                                                      Vec2* points, const std::size_t at[4]) {
  alignas(32) double px[4], py[4];
  _mm256_store_pd(px, _mm256_div_pd(_mm256_add_pd(_mm256_mul_pd(rb, xa), _mm256_mul_pd(ra, xb)), reach));
  _mm256_store_pd(py, _mm256_div_pd(_mm256_add_pd(_mm256_mul_pd(rb, ya), _mm256_mul_pd(ra, yb)), reach));
  for (int j = 0; j < 4; ++j) points[at[j]] = {px[j], py[j]};
}

// Writes the contact of candidate k of the block at the cursor: the normal,
// gap, reach, mass shares, slots, warm value (and contact point).
inline void write_contact(const ContactInput& in, const Pair* block, std::uint32_t first_k, std::uint32_t k,
                          bool points, const std::uint32_t* warm_cand, const double* warm_value,
                          std::size_t warm_size, Contacts& out, WriteCursor& cur) {
  const double* const x = in.x;
  const double* const y = in.y;
  const double* const r = in.r;
  const double* const m = in.m;
  const Pair p = block[k];
  const double reach = r[p.a] + r[p.b];
  const std::uint32_t cand = first_k + k;
  const std::size_t at = cur.to(cur.at++);
  const ContactRef c = out.geometry[at];
  cur.deep += set_normal_gap(x[p.b] - x[p.a], y[p.b] - y[p.a], reach, c);
  c.reach = reach;
  c.va = in.slot ? in.slot[p.a] : p.a;
  c.vb = in.slot ? in.slot[p.b] : p.b;
  set_shares(m[p.a], m[p.b], c);
  out.accum[at] = warm_of(cand, warm_cand, warm_value, warm_size, cur.w);
  if (points) out.point[at] = contact_point(x, y, r, p, reach);
  out.pairs[at] = p;
  out.candidate[at] = cand;
}

// The mass shares of four pairs, as set_shares makes them: exactly 1/2
// where the masses are equal, else m_b / (m_a + m_b) and m_a / (m_a + m_b).
// Four pairs of equal masses (a pile or a gas of one kind of body) skip the
// division.
struct Shares {
  __m256d a, b;
};
[[gnu::target("avx2"), gnu::always_inline]] inline Shares shares(__m256d ma, __m256d mb) {
  const __m256d half = _mm256_set1_pd(0.5);
  const __m256d equal = _mm256_cmp_pd(ma, mb, _CMP_EQ_OQ);
  if (_mm256_movemask_pd(equal) == 0xF) return {half, half};
  const __m256d inv = _mm256_div_pd(_mm256_set1_pd(1.0), _mm256_add_pd(ma, mb));
  return {_mm256_blendv_pd(_mm256_mul_pd(mb, inv), half, equal), _mm256_blendv_pd(_mm256_mul_pd(ma, inv), half, equal)};
}

// Stores lane j of v at f[at[j]]: one store where the four places are
// consecutive (a contact's fields are arrays: ContactStore).
[[gnu::target("avx2"), gnu::always_inline]] inline void store_at(double* f, const std::size_t at[4], __m256d v) {
  if (at[1] == at[0] + 1 && at[2] == at[0] + 2 && at[3] == at[0] + 3) {
    _mm256_storeu_pd(f + at[0], v);
    return;
  }
  alignas(32) double lane[4];
  _mm256_store_pd(lane, v);
  for (int j = 0; j < 4; ++j) f[at[j]] = lane[j];
}

// write_contact for hits [0, 4 floor(n / 4)) of the block, four at a time in
// AVX2 lanes: the same operations (IEEE square root and division are
// correctly rounded in lanes as one at a time), so the same bits; each field
// of the four stored with one store where they are consecutive. Returns the hits
// written. (The square root and three or five divisions a contact were a
// sixth of a pile's step on one thread.)
[[gnu::target("avx2")]] std::size_t write_contacts_avx2(const ContactInput& in, const Pair* block,
                                                        const Pair* at_slots, std::uint32_t first_k,
                                                        const std::uint32_t* hits,
                                                        std::size_t n, bool points, const std::uint32_t* warm_cand,
                                                        const double* warm_value, std::size_t warm_size,
                                                        Contacts& out, WriteCursor& cur) {
  const double* const x = in.x;
  const double* const y = in.y;
  const double* const r = in.r;
  const double* const m = in.m;
  const __m256d zero = _mm256_setzero_pd();
  const ContactFields geo = out.geometry.data();
  std::size_t h = 0;
  for (; h + 4 <= n; h += 4) {
    const Pair p[4] = {block[hits[h]], block[hits[h + 1]], block[hits[h + 2]], block[hits[h + 3]]};
    // Where collide reads the bodies in slot order (Contacts::SlotInputs:
    // `in` holds them at the slots), the candidates' slots index them, and
    // are the contacts' slots.
    const Pair s[4] = {at_slots ? at_slots[hits[h]] : p[0], at_slots ? at_slots[hits[h + 1]] : p[1],
                       at_slots ? at_slots[hits[h + 2]] : p[2], at_slots ? at_slots[hits[h + 3]] : p[3]};
    const __m256d xa = lanes_a(x, s), xb = lanes_b(x, s), ya = lanes_a(y, s), yb = lanes_b(y, s);
    const __m256d ra = lanes_a(r, s), rb = lanes_b(r, s), ma = lanes_a(m, s), mb = lanes_b(m, s);
    const __m256d reach = _mm256_add_pd(ra, rb);
    const NormalGap g = normal_gap(_mm256_sub_pd(xb, xa), _mm256_sub_pd(yb, ya), reach, cur.deep);
    const Shares sh = shares(ma, mb);
    std::uint32_t va[4], vb[4];
    for (int j = 0; j < 4; ++j) {
      va[j] = at_slots ? s[j].a : in.slot ? in.slot[p[j].a] : p[j].a;
      vb[j] = at_slots ? s[j].b : in.slot ? in.slot[p[j].b] : p[j].b;
    }
    const std::size_t at[4] = {cur.to(cur.at), cur.to(cur.at + 1), cur.to(cur.at + 2),
                               cur.to(cur.at + 3)};
    store_at(geo.nx, at, g.nx);
    store_at(geo.ny, at, g.ny);
    store_at(geo.sep, at, g.sep);
    store_at(geo.reach, at, reach);
    store_at(geo.share_a, at, sh.a);
    store_at(geo.share_b, at, sh.b);
    store_at(geo.bounce, at, zero);
    for (int j = 0; j < 4; ++j) {
      geo.va[at[j]] = va[j];
      geo.vb[at[j]] = vb[j];
    }
    if (points) contact_points(xa, xb, ya, yb, ra, rb, reach, out.point.data(), at);
    for (std::size_t j = 0; j < 4; ++j) {
      const std::uint32_t cand = first_k + hits[h + j];
      out.accum[at[j]] = warm_of(cand, warm_cand, warm_value, warm_size, cur.w);
      out.pairs[at[j]] = p[j];
      out.candidate[at[j]] = cand;
    }
    cur.at += 4;
  }
  _mm256_zeroupper();  // the code after the lanes is not AVX (as in resolve.cpp's run_avx2)
  return h;
}

// Verlet (collide with `start`): what push_contacts and restitute_contacts
// read of a contact and no more. The normal from the bodies' positions at
// the substep's start, not at detection (the predicted ones): a pair the
// predicted motion carried past or onto each other is pushed back the way it
// came, never through; where they coincided at the start, the normal at
// detection (write_contact's rule). The approach along it before any push
// (`bounce`: what restitution answers), the mass shares, the pair and
// candidate, the contact point for events. No gap, reach, slots or warm
// value: the push measures its own gap, and Verlet carries nothing from
// substep to substep. (Until 2026-12-06 collide wrote a whole contact and
// push_contacts made the normal and the approach again in a pass of its own:
// the same operations, so the same bits.)
inline void write_verlet_contact(const ContactInput& in, const VerletStart& s, Pair p, std::uint32_t cand,
                                 bool points, Contacts& out, std::size_t at) {
  const ContactRef c = out.geometry[at];
  const double dx = s.px[p.b] - s.px[p.a], dy = s.py[p.b] - s.py[p.a];
  const double d2 = dx * dx + dy * dy;
  const double reach = in.r[p.a] + in.r[p.b];
  if (d2 > 0.0) {
    const double d = std::sqrt(d2);
    c.nx = dx / d;
    c.ny = dy / d;
  } else {
    set_normal_gap(in.x[p.b] - in.x[p.a], in.y[p.b] - in.y[p.a], reach, c);
  }
  c.bounce = (s.vx[p.b] - s.vx[p.a]) * c.nx + (s.vy[p.b] - s.vy[p.a]) * c.ny;
  set_shares(in.m[p.a], in.m[p.b], c);
  if (points) out.point[at] = contact_point(in.x, in.y, in.r, p, reach);
  out.pairs[at] = p;
  out.candidate[at] = cand;
}

// write_verlet_contact for hits [0, 4 floor(n / 4)) of the block, four at a
// time in AVX2 lanes with the same operations (so the same bits); four of
// which a pair coincided at the start go one at a time. Contacts from `at0`
// on, in hit order (a Verlet list is always coloured: candidate order).
// Returns the hits written.
[[gnu::target("avx2")]] std::size_t write_verlet_avx2(const ContactInput& in, const VerletStart& s, const Pair* block,
                                                      std::uint32_t first_k, const std::uint32_t* hits, std::size_t n,
                                                      bool points, Contacts& out, std::size_t at0) {
  const __m256d zero = _mm256_setzero_pd();
  const ContactFields geo = out.geometry.data();
  std::size_t h = 0;
  for (; h + 4 <= n; h += 4) {
    const Pair p[4] = {block[hits[h]], block[hits[h + 1]], block[hits[h + 2]], block[hits[h + 3]]};
    const std::size_t at = at0 + h;
    const __m256d dx = _mm256_sub_pd(lanes_b(s.px, p), lanes_a(s.px, p));
    const __m256d dy = _mm256_sub_pd(lanes_b(s.py, p), lanes_a(s.py, p));
    const __m256d d2 = _mm256_add_pd(_mm256_mul_pd(dx, dx), _mm256_mul_pd(dy, dy));
    if (_mm256_movemask_pd(_mm256_cmp_pd(d2, zero, _CMP_GT_OQ)) != 0xF) {
      for (std::size_t j = 0; j < 4; ++j)
        write_verlet_contact(in, s, p[j], first_k + hits[h + j], points, out, at + j);
      continue;
    }
    const __m256d d = _mm256_sqrt_pd(d2);
    const __m256d nx = _mm256_div_pd(dx, d), ny = _mm256_div_pd(dy, d);
    const __m256d dvx = _mm256_sub_pd(lanes_b(s.vx, p), lanes_a(s.vx, p));
    const __m256d dvy = _mm256_sub_pd(lanes_b(s.vy, p), lanes_a(s.vy, p));
    const Shares sh = shares(lanes_a(in.m, p), lanes_b(in.m, p));
    _mm256_storeu_pd(geo.nx + at, nx);
    _mm256_storeu_pd(geo.ny + at, ny);
    _mm256_storeu_pd(geo.bounce + at, _mm256_add_pd(_mm256_mul_pd(dvx, nx), _mm256_mul_pd(dvy, ny)));
    _mm256_storeu_pd(geo.share_a + at, sh.a);
    _mm256_storeu_pd(geo.share_b + at, sh.b);
    if (points) {
      const __m256d ra = lanes_a(in.r, p), rb = lanes_b(in.r, p);
      const std::size_t to[4] = {at, at + 1, at + 2, at + 3};
      contact_points(lanes_a(in.x, p), lanes_b(in.x, p), lanes_a(in.y, p), lanes_b(in.y, p), ra, rb,
                     _mm256_add_pd(ra, rb), out.point.data(), to);
    }
    for (std::size_t j = 0; j < 4; ++j) {
      out.pairs[at + j] = p[j];
      out.candidate[at + j] = first_k + hits[h + j];
    }
  }
  _mm256_zeroupper();  // the code after the lanes is not AVX (as in resolve.cpp's run_avx2)
  return h;
}

// Contact `at`, written by the last collide from the same pair list and
// slots (collide's refresh): its normal, gap and contact point from the
// positions now, with write_contact's operations; its pair, reach, mass
// shares, slots, candidate and warm value stay.
inline void refresh_contact(const ContactInput& in, std::size_t at, bool points, Contacts& out, std::size_t& deep) {
  const double* const x = in.x;
  const double* const y = in.y;
  const Pair p = out.pairs[at];
  const ContactRef c = out.geometry[at];
  deep += set_normal_gap(x[p.b] - x[p.a], y[p.b] - y[p.a], c.reach, c);
  if (points) out.point[at] = contact_point(x, y, in.r, p, c.reach);
}

// refresh_contact for contacts [at0, at0 + 4 floor(n / 4)), four at a time in
// AVX2 lanes, with write_contacts_avx2's operations (the same bits). Returns
// how many it refreshed.
[[gnu::target("avx2")]] std::size_t refresh_contacts_avx2(const ContactInput& in, std::size_t at0, std::size_t n,
                                                          bool points, Contacts& out, std::size_t& deep) {
  const double* const x = in.x;
  const double* const y = in.y;
  const double* const r = in.r;
  const ContactFields geo = out.geometry.data();
  const Pair* const pairs = out.pairs.data();
  std::size_t h = 0;
  for (; h + 4 <= n; h += 4) {
    const std::size_t at = at0 + h;
    const Pair* const p = pairs + at;
    const __m256d xa = lanes_a(x, p), xb = lanes_b(x, p), ya = lanes_a(y, p), yb = lanes_b(y, p);
    const __m256d reach = _mm256_loadu_pd(geo.reach + at);
    const NormalGap g = normal_gap(_mm256_sub_pd(xb, xa), _mm256_sub_pd(yb, ya), reach, deep);
    _mm256_storeu_pd(geo.nx + at, g.nx);
    _mm256_storeu_pd(geo.ny + at, g.ny);
    _mm256_storeu_pd(geo.sep + at, g.sep);
    _mm256_storeu_pd(geo.bounce + at, _mm256_setzero_pd());
    if (points) {
      const std::size_t ats[4] = {at, at + 1, at + 2, at + 3};
      contact_points(xa, xb, ya, yb, lanes_a(r, p), lanes_b(r, p), reach, out.point.data(), ats);
    }
  }
  _mm256_zeroupper();  // the code after the lanes is not AVX (as in resolve.cpp's run_avx2)
  return h;
}

// The first body from i on (i, i + 4, ...) of the first four of which one is
// within `speculative` of a wall, by collide_walls's own gaps, four at a time;
// i1 or the tail under four when none is. (Most bodies are far from every
// wall; this pass was a fifteenth of a gas's step on one thread.)
[[gnu::target("avx2")]] std::size_t next_near_wall_avx2(const double* x, const double* y, const double* r,
                                                       const Bounds& box, double speculative, std::size_t i,
                                                       std::size_t i1) {
  const __m256d xlo = _mm256_set1_pd(box.min.x), xhi = _mm256_set1_pd(box.max.x);
  const __m256d ylo = _mm256_set1_pd(box.min.y), yhi = _mm256_set1_pd(box.max.y);
  const __m256d spec = _mm256_set1_pd(speculative);
  for (; i + 4 <= i1; i += 4) {
    const __m256d xs = _mm256_loadu_pd(x + i), ys = _mm256_loadu_pd(y + i), rs = _mm256_loadu_pd(r + i);
    const __m256d near = _mm256_or_pd(
        _mm256_or_pd(_mm256_cmp_pd(_mm256_sub_pd(_mm256_sub_pd(xs, rs), xlo), spec, _CMP_LT_OQ),
                     _mm256_cmp_pd(_mm256_sub_pd(_mm256_sub_pd(xhi, rs), xs), spec, _CMP_LT_OQ)),
        _mm256_or_pd(_mm256_cmp_pd(_mm256_sub_pd(_mm256_sub_pd(ys, rs), ylo), spec, _CMP_LT_OQ),
                     _mm256_cmp_pd(_mm256_sub_pd(_mm256_sub_pd(yhi, rs), ys), spec, _CMP_LT_OQ)));
    if (_mm256_movemask_pd(near) != 0) break;
  }
  _mm256_zeroupper();  // the code after the lanes is not AVX (as in resolve.cpp's run_avx2)
  return i;
}

// Colours the contacts of a list left uncoloured (Colouring::per_contact):
// the hits of every block, in candidate order, by the greedy rule
// (take_colour), then each one's place in colour order (out.order, candidate
// order within a colour) and the colours' ranges (out.colour_begin).
void colour_contacts(std::size_t bodies, const PairBlocks& candidates, std::size_t total, Contacts& out) {
  if (out.colour_used.size() != bodies) out.colour_used.assign(bodies, 0);
  std::uint64_t* const used = out.colour_used.data();
  out.hit_colour.resize(total);
  // The contacts' pairs, gathered first (independent loads, which the
  // processor overlaps), so that the greedy loop can prefetch the bodies'
  // masks some contacts ahead: in a large gas each mask is a cache miss,
  // and the loop, one contact after another, waited for every one.
  out.hit_pair.resize(total);
  Pair* const hp = out.hit_pair.data();
  std::size_t g = 0;
  for (std::size_t blk = 0; blk < candidates.blocks.size(); ++blk) {
    const Pair* const block = candidates.blocks[blk].data();
    for (const std::uint32_t k : out.block_contacts[blk].hits) hp[g++] = block[k];
  }
  constexpr std::size_t kAhead = 16;
  std::uint32_t count[kColours] = {};
  for (g = 0; g < total; ++g) {
    if (g + kAhead < total) {
      __builtin_prefetch(used + hp[g + kAhead].a, 1);
      __builtin_prefetch(used + hp[g + kAhead].b, 1);
    }
    const std::uint32_t c = take_colour(used, hp[g]);
    out.hit_colour[g] = static_cast<std::uint8_t>(c);
    ++count[c];
  }
  for (g = 0; g < total; ++g) used[hp[g].a] = used[hp[g].b] = 0;
  std::uint32_t colours = 0;
  for (std::uint32_t c = 0; c < kColours; ++c)
    if (count[c]) colours = c + 1;
  out.colour_begin.assign(colours + 1, 0);
  for (std::uint32_t c = 0; c < colours; ++c) out.colour_begin[c + 1] = out.colour_begin[c] + count[c];
  std::uint32_t next[kColours];
  std::copy(out.colour_begin.begin(), out.colour_begin.begin() + colours, next);
  out.order.resize(total);
  for (std::size_t h = 0; h < total; ++h) out.order[h] = next[out.hit_colour[h]]++;
  contact_colouring_runs.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

void allow_contact_refresh(bool allowed) { refresh_allowed.store(allowed, std::memory_order_relaxed); }
std::size_t set_slot_inputs_from(std::size_t bodies) {
  return slot_inputs_from.exchange(bodies, std::memory_order_relaxed);
}
std::uint64_t slot_input_collides() { return slot_input_runs.load(std::memory_order_relaxed); }
std::uint64_t contact_refreshes() { return refreshes.load(std::memory_order_relaxed); }
std::uint64_t contact_colourings() { return contact_colouring_runs.load(std::memory_order_relaxed); }
std::uint64_t contacts_made_ahead(bool per_contact) { return made_ahead[per_contact ? 1 : 0].load(std::memory_order_relaxed); }

// A large world's bodies lie in storage (id) order, which a pile's fall
// mixes, so its narrow phase gathers each candidate's fields from all over
// the store. The broad phase's order (the slots) is spatial: read in slot
// order, neighbouring candidates share cache lines. Makes (or brings up to
// date) out.slot_inputs for this list: its candidates' slots, block by block
// (only the blocks a repair appended since), the radii and masses at a new
// list, the positions every call. The same values read from other places:
// the same bits.
namespace {
void prepare_slot_inputs(const BodyStore& b, const PairBlocks& candidates, Contacts& out) {
  Contacts::SlotInputs& in = out.slot_inputs;
  const std::size_t n = b.size();
  const std::uint32_t* const slot = out.slot_of.data();
  if (in.base != candidates.base || in.body.size() != n) {
    in.base = candidates.base;
    in.blocks = 0;
    in.body.resize(n);
    for (std::size_t i = 0; i < n; ++i) in.body[slot[i]] = static_cast<std::uint32_t>(i);
    in.r.resize(n);
    in.m.resize(n);
    in.x.resize(n);
    in.y.resize(n);
  }
  const std::size_t nb = candidates.blocks.size();
  in.pairs.resize(nb);
  if (in.blocks < nb) {
    for_blocks(nb - in.blocks, 1, [&](std::size_t k, std::size_t, std::size_t) {
      const std::vector<Pair>& block = candidates.blocks[in.blocks + k];
      std::vector<Pair>& at = in.pairs[in.blocks + k];
      at.resize(block.size());
      for (std::size_t j = 0; j < block.size(); ++j) at[j] = Pair{slot[block[j].a], slot[block[j].b]};
    });
  }
  const bool fresh = in.blocks == 0;
  in.blocks = nb;
  const std::uint32_t* const body = in.body.data();
  for_blocks(n, 4096, [&, body, fresh](std::size_t s0, std::size_t s1, std::size_t) {
    for (std::size_t s = s0; s < s1; ++s) {
      in.x[s] = b.x[body[s]];
      in.y[s] = b.y[body[s]];
      if (fresh) {
        in.r[s] = b.r[body[s]];
        in.m[s] = b.m[body[s]];
      }
    }
  });
  slot_input_runs.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

std::uint64_t collide(const BodyStore& b, const PairBlocks& candidates, const Colouring& colouring,
                      double speculative, bool points, Contacts& out, const VerletStart* start, double same_radius,
                      double resting, double h) {
  const std::size_t nb = candidates.blocks.size();
  const double* const x = b.x.data();
  const double* const y = b.y.data();
  const double* const r = b.r.data();
  const double* const m = b.m.data();
  const std::vector<std::uint32_t> first = candidates.starts();  // candidate index of each block's first pair
  if (out.block_contacts.size() < nb) out.block_contacts.resize(nb);
  // 1. Which candidates are contacts: each block lists its own, in order
  // (four at a time in lanes where the processor has them), keeping the
  // list of the collide before.
  const bool lanes = simd_in_use();
  // An elastic gas's list leaves out the speculative pairs that miss the
  // substep (is_contact, leaves_misses).
  const Misses misses =
      leaves_misses(colouring, start, resting) ? Misses{b.vx.data(), b.vy.data(), resting * resting, h} : Misses{};
  // A large world reads its bodies in slot order where it has slots (not
  // an elastic gas's list: its test reads velocities too).
  const bool at_slots = start == nullptr && lanes && misses.vx == nullptr && out.slot_of.size() == b.size() &&
                        b.size() >= slot_inputs_from.load(std::memory_order_relaxed) && b.size() > 0;
  if (at_slots) prepare_slot_inputs(b, candidates, out);
  const Contacts::SlotInputs& slot_in = out.slot_inputs;
  for_blocks(nb, 1, [&, x, y, r, speculative, same_radius, misses, at_slots](std::size_t blk, std::size_t, std::size_t) {
    const Pair* const block = candidates.blocks[blk].data();
    const std::size_t size = candidates.blocks[blk].size();
    std::vector<std::uint32_t>& hits = out.block_contacts[blk].hits;
    std::swap(hits, out.block_contacts[blk].last_hits);
    hits.clear();
    if (at_slots)
      return contact_candidates_avx2(slot_in.x.data(), slot_in.y.data(), slot_in.r.data(), slot_in.pairs[blk].data(),
                                     size, speculative, same_radius, misses, hits);
    if (lanes) return contact_candidates_avx2(x, y, r, block, size, speculative, same_radius, misses, hits);
    for (std::size_t k = 0; k < size; ++k)
      if (is_contact(x, y, r, block[k], speculative, misses)) hits.push_back(static_cast<std::uint32_t>(k));
  });
  // Each block's first contact: the counts in block order.
  out.block_count.assign(nb + 1, 0);
  for (std::size_t blk = 0; blk < nb; ++blk)
    out.block_count[blk + 1] = out.block_count[blk] + static_cast<std::uint32_t>(out.block_contacts[blk].hits.size());
  const std::size_t total = out.block_count[nb];
  // The solver's slots where its passes are shared (Contacts::slotted; the
  // rebuild made slots only where there is more than one thread).
  out.slotted = out.slot_of.size() == b.size() && total >= kSharedPassesFrom;
  const std::uint32_t* const slot = out.slotted ? out.slot_of.data() : nullptr;
  // A refresh: where the last collide here wrote the same contacts (the
  // same pair list, slots and hits; a coloured list, so in candidate order)
  // and relax left the warm values in them, each contact's pair, reach,
  // mass shares, slots, candidate and warm value are what this one would
  // write: only the normal, gap and contact point are written again (a
  // settled pile's substeps). The same bits.
  bool refresh = start == nullptr && refresh_allowed.load(std::memory_order_relaxed) && candidates.generation != 0 &&
                 candidates.generation == out.written_from &&
                 slot == out.written_slots && !colouring.per_contact && out.warm_in_contacts && out.order.empty() &&
                 out.size() == total;
  for (std::size_t blk = 0; refresh && blk < nb; ++blk)
    refresh = out.block_contacts[blk].hits == out.block_contacts[blk].last_hits;
  out.written_from = candidates.generation;
  out.written_slots = slot;
  // The warm values, in candidate order as the contacts are: last substep's
  // contacts' own, where relax left them (set aside here, as the new ones
  // are written; a refresh leaves them in place), else the list a rebuild
  // or a restore made.
  if (refresh) {
    refreshes.fetch_add(1, std::memory_order_relaxed);
    out.warm_in_contacts = false;
  } else if (out.warm_in_contacts && !out.order.empty()) {
    // Last substep's contacts are in its colour order.
    out.gather_warm();
    out.warm_in_contacts = false;
  } else if (out.warm_in_contacts) {
    std::swap(out.candidate, out.warm_candidate);
    std::swap(out.accum, out.warm_value);
    out.warm_in_contacts = false;
  }
  const std::uint32_t* const warm_cand = out.warm_candidate.data();
  const double* const warm_value = out.warm_value.data();
  const std::size_t warm_size = out.warm_candidate.size();
  if (!refresh) {
    out.by_body_current = false;
    out.pairs.resize(total);
    out.geometry.resize(total);
    out.accum.resize(total);
    out.candidate.resize(total);
  }
  out.collided.assign(total, 0);
  if (points) out.point.resize(total);
  // A list left uncoloured: this substep's contacts are coloured here.
  if (colouring.per_contact) {
    colour_contacts(b.size(), candidates, total, out);
  } else {
    out.order.clear();
  }
  const std::uint32_t* const place = out.order.empty() ? nullptr : out.order.data();
  // 2. Each block writes its contacts into its own slots of the list (its
  // places in colour order), warm values merged in (four at a time in lanes
  // where the processor has them), or refreshes them there.
  const ContactInput in{x, y, r, m, slot};
  for_blocks(nb, 1, [&, in, points, refresh, at_slots](std::size_t blk, std::size_t, std::size_t) {
    Contacts::Block& local = out.block_contacts[blk];
    if (start) {
      const Pair* const block = candidates.blocks[blk].data();
      const std::uint32_t first_k = first[blk];
      const std::size_t at0 = out.block_count[blk], nh = local.hits.size();
      std::size_t h = lanes ? write_verlet_avx2(in, *start, block, first_k, local.hits.data(), nh, points, out, at0) : 0;
      for (; h < nh; ++h)
        write_verlet_contact(in, *start, block[local.hits[h]], first_k + local.hits[h], points, out, at0 + h);
      local.deep = 0;
      return;
    }
    if (refresh) {
      const std::size_t at0 = out.block_count[blk], nh = local.hits.size();
      std::size_t deep = 0;
      std::size_t h = lanes ? refresh_contacts_avx2(in, at0, nh, points, out, deep) : 0;
      for (; h < nh; ++h) refresh_contact(in, at0 + h, points, out, deep);
      local.deep = deep;
      return;
    }
    const Pair* const block = candidates.blocks[blk].data();
    const std::uint32_t first_k = first[blk];
    WriteCursor at{out.block_count[blk],
                   static_cast<std::size_t>(std::lower_bound(warm_cand, warm_cand + warm_size, first_k) - warm_cand), 0,
                   place};
    const std::size_t nh = local.hits.size();
    // In slot order where the contacts take the slots (the rest one at a
    // time from the store: the same values).
    const bool slot_order = at_slots && slot != nullptr;
    const ContactInput lanes_in = slot_order ? ContactInput{slot_in.x.data(), slot_in.y.data(), slot_in.r.data(),
                                                            slot_in.m.data(), slot}
                                             : in;
    std::size_t h = lanes ? write_contacts_avx2(lanes_in, block, slot_order ? slot_in.pairs[blk].data() : nullptr,
                                                first_k, local.hits.data(), nh, points, warm_cand, warm_value,
                                                warm_size, out, at)
                          : 0;
    for (; h < nh; ++h) write_contact(in, block, first_k, local.hits[h], points, warm_cand, warm_value, warm_size, out, at);
    local.deep = at.deep;
  });
  out.deep = 0;
  for (std::size_t blk = 0; blk < nb; ++blk) out.deep += out.block_contacts[blk].deep;
  // Used: the next substep starts from what relax leaves (or cold).
  out.warm_candidate.clear();
  out.warm_value.clear();
  if (!colouring.per_contact) {
    const std::uint32_t colours = colouring.colours();
    out.colour_begin.resize(colours + 1);
    for (std::uint32_t c = 0; c <= colours; ++c) out.colour_begin[c] = out.block_count[colouring.block_begin[c]];
  }
  return total;
}

void take_warm(Contacts& from, Contacts& ahead) {
  // Both in candidate order: `from`'s through for_each_warm, `ahead`'s
  // contacts by their place in candidate order (h), at ahead.order[h] where
  // they are in this substep's colour order.
  // The same list as collide takes (its warm values' two cases, so the
  // same bits: where `from` is in candidate order, its own arrays).
  const bool own = from.order.empty();
  made_ahead[own ? 0 : 1].fetch_add(1, std::memory_order_relaxed);
  if (!own) from.gather_warm();
  const std::uint32_t* const place = ahead.order.empty() ? nullptr : ahead.order.data();
  const std::uint32_t* const warm_cand = own ? from.candidate.data() : from.warm_candidate.data();
  const double* const warm_value = own ? from.accum.data() : from.warm_value.data();
  const std::size_t warm_size = own ? from.size() : from.warm_candidate.size();
  std::size_t w = 0;
  for (std::size_t h = 0; h < ahead.size() && w < warm_size; ++h) {
    const std::size_t at = place ? place[h] : h;
    ahead.accum[at] = warm_of(ahead.candidate[at], warm_cand, warm_value, warm_size, w);
  }
  from.forget_warm();
}

void collide_walls(const BodyStore& b, const Bounds& box, double speculative, WallContacts& walls,
                   std::span<const std::uint32_t> slot_of) {
  const std::uint32_t* const slot = slot_of.size() == b.size() ? slot_of.data() : nullptr;
  std::swap(walls.blocks, walls.last);
  const std::size_t n = b.size();
  const std::size_t nb = box.walled ? block_count(n, kWallBlock) : 0;
  walls.blocks.resize(nb);
  const bool warm = walls.warm && walls.last.size() == nb;
  const bool lanes = simd_in_use();
  for_blocks(n, kWallBlock, [&](std::size_t i0, std::size_t i1, std::size_t blk) {
    if (!box.walled) return;
    auto& out = walls.blocks[blk];
    out.clear();
    const std::vector<WallContact>* last = warm ? &walls.last[blk] : nullptr;
    std::size_t w = 0;
    const double* const x = b.x.data();
    const double* const y = b.y.data();
    const double* const r = b.r.data();
    for (std::size_t i = i0; i < i1; ++i) {
      // Skip, four at a time, the bodies far from every wall; look at the
      // next four one at a time.
      if (lanes && (i - i0) % 4 == 0) {
        i = next_near_wall_avx2(x, y, r, box, speculative, i, i1);
        if (i == i1) break;
      }
      const double gaps[4] = {x[i] - r[i] - box.min.x, box.max.x - r[i] - x[i], y[i] - r[i] - box.min.y,
                              box.max.y - r[i] - y[i]};
      // Most bodies are far from every wall: one well-predicted branch.
      if (!(std::min(std::min(gaps[0], gaps[1]), std::min(gaps[2], gaps[3])) < speculative)) continue;
      for (std::uint32_t wall = 0; wall < 4; ++wall) {
        if (!(gaps[wall] < speculative)) continue;
        WallContact c;
        c.entry = static_cast<std::uint32_t>(i) << 2 | wall;
        c.slot = slot ? slot[i] : static_cast<std::uint32_t>(i);
        c.sep = gaps[wall];
        if (last) {
          while (w < last->size() && (*last)[w].entry < c.entry) ++w;
          if (w < last->size() && (*last)[w].entry == c.entry) c.accum = (*last)[w].accum;
        }
        out.push_back(c);
      }
    }
  });
  if (!box.walled) walls.blocks.clear();
}

}  // namespace carom::detail
