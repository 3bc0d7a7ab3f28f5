// Validation: every kind of bad input is rejected with the right code, the
// field's path (Status::field) and a reason naming the value, and leaves the
// world as it was.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "carom/world.hpp"

namespace carom {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

BodyDesc body_at(double x, double y, BodyId id = kAutoId) {
  BodyDesc d;
  d.id = id;
  d.position = {x, y};
  d.velocity = {1.0, -0.5};
  d.radius = 0.5;
  d.mass = 2.0;
  return d;
}

// Everything a failed call must leave alone.
struct Fingerprint {
  std::uint64_t hash;
  std::size_t size;
  BodyId next_id;
  Params params;
  std::uint64_t step;

  explicit Fingerprint(const World& w)
      : hash(w.state_hash()), size(w.size()), next_id(w.next_id()), params(w.params()), step(w.stats().step) {}
};

bool same_params(const Params& a, const Params& b) {
  return a.bounds.walled == b.bounds.walled && a.bounds.min == b.bounds.min && a.bounds.max == b.bounds.max &&
         a.gravity == b.gravity && a.restitution == b.restitution && a.linear_damping == b.linear_damping &&
         a.solver == b.solver && a.substeps == b.substeps && a.dt == b.dt && a.density == b.density &&
         a.record_events == b.record_events && a.max_events == b.max_events;
}

class Validation : public testing::Test {
 protected:
  static constexpr std::uint32_t kMaxBodies = 64;

  // Ten bodies, ids 1..10, id 4 removed, a few steps taken: a world with
  // history, so "unchanged" covers ids, retired ids and motion.
  void SetUp() override {
    Params p;
    p.gravity = {0.0, -1.0};
    p.restitution = 0.7;
    world_ = std::make_unique<World>(WorldConfig{.max_bodies = kMaxBodies, .threads = 2}, p);
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(world_->add_body(body_at(10.0 + 5.0 * i, 50.0)).ok());
    ASSERT_TRUE(world_->remove_body(4).ok());
    for (int s = 0; s < 3; ++s) world_->step();
    ASSERT_EQ(world_->size(), 9u);
    ASSERT_EQ(world_->next_id(), 11u);
  }

  World& w() { return *world_; }

  // Runs a call that must fail: checks the code, the field path, that the
  // reason holds every one of `values`, that the message is "FIELD: REASON",
  // and that the world is unchanged.
  template <class Call>
  void expect_rejected(Call&& call, StatusCode code, const std::string& field, std::vector<std::string> values,
                       const std::string& what) {
    SCOPED_TRACE(what);
    const Fingerprint before(w());
    const Status st = call();
    EXPECT_FALSE(st.ok());
    EXPECT_EQ(st.code(), code) << "got " << to_string(st.code()) << ": " << st.message();
    EXPECT_EQ(st.field(), field) << st.message();
    EXPECT_EQ(st.message(), field + ": " + st.reason());
    for (const std::string& value : values)
      EXPECT_NE(st.reason().find(value), std::string::npos) << "reason \"" << st.reason() << "\" lacks \"" << value << "\"";
    const Fingerprint after(w());
    EXPECT_EQ(after.hash, before.hash);
    EXPECT_EQ(after.size, before.size);
    EXPECT_EQ(after.next_id, before.next_id);
    EXPECT_EQ(after.step, before.step);
    EXPECT_TRUE(same_params(after.params, before.params));
  }

  std::unique_ptr<World> world_;
};

TEST_F(Validation, NonFiniteBodyFieldsAreRejected) {
  struct Case {
    const char* field;
    void (*spoil)(BodyDesc&, double);
  };
  const Case cases[] = {
      {"position.x", [](BodyDesc& d, double v) { d.position.x = v; }},
      {"position.y", [](BodyDesc& d, double v) { d.position.y = v; }},
      {"velocity.x", [](BodyDesc& d, double v) { d.velocity.x = v; }},
      {"velocity.y", [](BodyDesc& d, double v) { d.velocity.y = v; }},
      {"radius", [](BodyDesc& d, double v) { d.radius = v; }},
      {"mass", [](BodyDesc& d, double v) { d.mass = v; }},
  };
  for (const Case& c : cases) {
    for (const double bad : {kNaN, kInf, -kInf}) {
      BodyDesc d = body_at(30.0, 80.0);
      c.spoil(d, bad);
      const std::string value = std::isnan(bad) ? "nan" : (bad > 0 ? "inf" : "-inf");
      expect_rejected([&] { return w().add_body(d); }, StatusCode::kInvalidArgument, c.field, {value},
                      std::string("add_body ") + c.field + " " + value);
    }
  }
}

TEST_F(Validation, NonPositiveRadiusAndNegativeMassAreRejected) {
  for (const double r : {0.0, -1.0, -1e-300}) {
    BodyDesc d = body_at(30.0, 80.0);
    d.radius = r;
    expect_rejected([&] { return w().add_body(d); }, StatusCode::kInvalidArgument, "radius", {r == 0.0 ? "0" : "-1"},
                    "radius " + std::to_string(r));
  }
  for (const double m : {-1.0, -2.5}) {
    BodyDesc d = body_at(30.0, 80.0);
    d.mass = m;
    expect_rejected([&] { return w().add_body(d); }, StatusCode::kInvalidArgument, "mass", {m == -1.0 ? "-1" : "-2.5"},
                    "mass " + std::to_string(m));
  }
}

TEST_F(Validation, BodyOutsideTheBoxIsRejected) {
  // Box [0, 100]^2, radius 0.5: centres must lie in [0.5, 99.5]. The field
  // is the coordinate that is out.
  const std::pair<Vec2, const char*> outside[] = {{{-3.0, 50.0}, "position.x"}, {{0.25, 50.0}, "position.x"},
                                                  {{99.75, 50.0}, "position.x"}, {{50.0, 101.0}, "position.y"},
                                                  {{50.0, 0.4}, "position.y"}};
  for (const auto& [p, field] : outside) {
    const BodyDesc d = body_at(p.x, p.y);
    expect_rejected([&] { return w().add_body(d); }, StatusCode::kOutOfRange, field, {},
                    "add_body at (" + std::to_string(p.x) + ", " + std::to_string(p.y) + ")");
  }
  // The value, too: the message shows the position.
  const Status st = w().add_body(body_at(-3.0, 50.0));
  EXPECT_NE(st.message().find("-3"), std::string::npos) << st.message();
  // And set_position checks the box for the body's own radius.
  expect_rejected([&] { return w().set_position(2, {99.75, 50.0}); }, StatusCode::kOutOfRange, "position.x",
                  {"99.75"}, "set_position outside");
}

TEST_F(Validation, UnknownIdsAreRejected) {
  // 4 was removed, 11 never existed, 0 is kAutoId.
  for (const BodyId id : {BodyId{4}, BodyId{11}, BodyId{0}, kMaxBodyId}) {
    const std::string sid = std::to_string(id);
    expect_rejected([&] { return w().remove_body(id); }, StatusCode::kNotFound, "id", {sid}, "remove_body " + sid);
    expect_rejected([&] { return w().set_position(id, {20.0, 20.0}); }, StatusCode::kNotFound, "id", {sid},
                    "set_position " + sid);
    expect_rejected([&] { return w().set_velocity(id, {1.0, 1.0}); }, StatusCode::kNotFound, "id", {sid},
                    "set_velocity " + sid);
    expect_rejected([&] { return w().apply_impulse(id, {1.0, 1.0}); }, StatusCode::kNotFound, "id", {sid},
                    "apply_impulse " + sid);
    BodyState out;
    out.id = 77;
    expect_rejected([&] { return w().body(id, &out); }, StatusCode::kNotFound, "id", {sid}, "body " + sid);
    EXPECT_EQ(out.id, 77u);
    EXPECT_FALSE(w().contains(id));
  }
  // A batch with one unknown id removes none of the others, and says which.
  const std::vector<BodyId> ids{1, 2, 42, 3};
  expect_rejected([&] { return w().remove_bodies(ids); }, StatusCode::kNotFound, "ids[2]", {"42"}, "remove_bodies");
  EXPECT_EQ(w().remove_bodies(ids).index(), 2u);
  EXPECT_TRUE(w().contains(1));
  const std::vector<BodyId> twice{2, 3, 2};
  expect_rejected([&] { return w().remove_bodies(twice); }, StatusCode::kInvalidArgument, "ids[2]", {"2 again"},
                  "remove_bodies twice");
}

TEST_F(Validation, NonFiniteSettersAreRejected) {
  for (const double bad : {kNaN, kInf}) {
    const std::string value = std::isnan(bad) ? "nan" : "inf";
    expect_rejected([&] { return w().set_position(2, {bad, 20.0}); }, StatusCode::kInvalidArgument, "position.x",
                    {value}, "set_position " + value);
    expect_rejected([&] { return w().set_velocity(2, {0.0, bad}); }, StatusCode::kInvalidArgument, "velocity.y",
                    {value}, "set_velocity " + value);
    expect_rejected([&] { return w().apply_impulse(2, {bad, 0.0}); }, StatusCode::kInvalidArgument, "impulse",
                    {value}, "apply_impulse " + value);
  }
  // Finite, but beyond the speed limit, directly or through an impulse.
  expect_rejected([&] { return w().set_velocity(2, {1.5e308, 0.0}); }, StatusCode::kInvalidArgument, "velocity.x",
                  {"1.5e+308"}, "set_velocity beyond kMaxSpeed");
  expect_rejected([&] { return w().apply_impulse(2, {1e308, 0.0}); }, StatusCode::kInvalidArgument, "impulse",
                  {"1e+308"}, "apply_impulse overflowing the velocity");
  expect_rejected([&] { return w().set_position(2, {20.0, 1e300}); }, StatusCode::kInvalidArgument, "position.y",
                  {"1e+300"}, "set_position beyond kMaxCoordinate");
}

// Finite values so large or so small that a step would overflow to inf or
// divide by a subnormal are refused with the limit in the message (each of
// these produced NaN positions before the limits existed).
TEST_F(Validation, LimitsKeepEveryStepFinite) {
  auto with = [](auto edit) {
    BodyDesc d = body_at(30.0, 80.0);
    edit(d);
    return d;
  };
  expect_rejected([&] { return w().add_body(with([](BodyDesc& d) { d.radius = 1e-310; })); },
                  StatusCode::kInvalidArgument, "radius", {"1e-310"}, "subnormal radius");
  expect_rejected([&] { return w().add_body(with([](BodyDesc& d) { d.mass = 1e308; })); },
                  StatusCode::kInvalidArgument, "mass", {"1e+308"}, "huge mass");
  expect_rejected([&] { return w().add_body(with([](BodyDesc& d) { d.velocity = {0.0, -1e300}; })); },
                  StatusCode::kInvalidArgument, "velocity.y", {"-1e+300"}, "huge velocity");

  Params open;
  open.bounds.walled = false;
  World unbounded({.max_bodies = 8, .threads = 1}, open);
  BodyDesc far = body_at(1e300, 0.0);
  Status st = unbounded.add_body(far);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.field(), "position.x") << st.message();
  BodyDesc huge = body_at(0.0, 0.0);
  huge.radius = 1e308;
  st = unbounded.add_body(huge);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.field(), "radius") << st.message();
  EXPECT_EQ(unbounded.size(), 0u);

  Params p = w().params();
  p.dt = 1e-320;
  expect_rejected([&] { return w().set_params(p); }, StatusCode::kInvalidArgument, "dt", {}, "subnormal dt");
  p = w().params();
  p.density = 1e308;
  expect_rejected([&] { return w().set_params(p); }, StatusCode::kInvalidArgument, "density", {"1e+308"},
                  "huge density");
  // A density within its limit can still make density x area too heavy.
  p.density = 1e29;
  ASSERT_TRUE(w().set_params(p).ok());
  expect_rejected([&] { return w().add_body(with([](BodyDesc& d) { d.radius = 10.0; d.mass = 0.0; })); },
                  StatusCode::kInvalidArgument, "mass", {"density x area"}, "density x area too heavy");
}

TEST(WorldConfigLimits, MaxBodiesIsCapped) {
  World w({.max_bodies = 0xFFFFFFFFu, .threads = 1}, Params{});
  EXPECT_EQ(w.config().max_bodies, kMaxBodies);
}

TEST_F(Validation, UsedIdsAreNeverAcceptedAgain) {
  // In use, and removed before.
  for (const BodyId id : {BodyId{3}, BodyId{4}}) {
    const std::string sid = std::to_string(id);
    expect_rejected([&] { return w().add_body(body_at(30.0, 80.0, id)); }, StatusCode::kAlreadyExists, "id", {sid},
                    "add_body id " + sid);
  }
  // Not even after clear().
  World fresh({.max_bodies = 8, .threads = 1}, Params{});
  ASSERT_TRUE(fresh.add_body(body_at(10.0, 10.0, 5)).ok());
  fresh.clear();
  EXPECT_EQ(fresh.size(), 0u);
  const Status st = fresh.add_body(body_at(10.0, 10.0, 5));
  EXPECT_EQ(st.code(), StatusCode::kAlreadyExists) << st.message();
  EXPECT_EQ(st.field(), "id");
  EXPECT_EQ(fresh.size(), 0u);
  // Auto ids never hand out a used id either.
  BodyId got = 0;
  ASSERT_TRUE(fresh.add_body(body_at(10.0, 10.0), &got).ok());
  EXPECT_GT(got, 5u);
}

TEST_F(Validation, IdAboveTheMaximumIsRejected) {
  expect_rejected([&] { return w().add_body(body_at(30.0, 80.0, kMaxBodyId + 1)); }, StatusCode::kInvalidArgument,
                  "id", {std::to_string(kMaxBodyId + 1)}, "id above kMaxBodyId");
}

TEST_F(Validation, AutoIdsRunOutAfterTheMaximumId) {
  ASSERT_TRUE(w().add_body(body_at(30.0, 80.0, kMaxBodyId)).ok());
  // Every id up to the maximum counts as used now: no auto id is left, not
  // even in a batch whose other bodies are fine.
  expect_rejected([&] { return w().add_body(body_at(32.0, 80.0)); }, StatusCode::kResourceExhausted, "id",
                  {std::to_string(kMaxBodyId)}, "auto id after kMaxBodyId");
  const std::vector<BodyDesc> batch{body_at(34.0, 80.0, 30), body_at(36.0, 80.0)};
  expect_rejected([&] { return w().add_bodies(batch); }, StatusCode::kResourceExhausted, "bodies[1].id",
                  {std::to_string(kMaxBodyId)}, "batch with an auto id after kMaxBodyId");
  EXPECT_FALSE(w().contains(30));
}

TEST_F(Validation, DuplicateIdsInOneBatchRejectTheWholeBatch) {
  // Named at the second place the id appears.
  const std::vector<BodyDesc> batch{body_at(20.0, 80.0, 20), body_at(22.0, 80.0, 21), body_at(24.0, 80.0),
                                    body_at(26.0, 80.0, 20)};
  expect_rejected([&] { return w().add_bodies(batch); }, StatusCode::kAlreadyExists, "bodies[3].id", {"20"},
                  "duplicate id in batch");
  EXPECT_FALSE(w().contains(21));
}

TEST_F(Validation, BatchErrorsNameTheIndex) {
  struct Case {
    void (*spoil)(BodyDesc&);
    StatusCode code;
    const char* item_field;
    const char* value;
  };
  const Case cases[] = {
      {[](BodyDesc& d) { d.radius = -1.0; }, StatusCode::kInvalidArgument, "radius", "-1"},
      {[](BodyDesc& d) { d.mass = kNaN; }, StatusCode::kInvalidArgument, "mass", "nan"},
      {[](BodyDesc& d) { d.position.y = kInf; }, StatusCode::kInvalidArgument, "position.y", "inf"},
      {[](BodyDesc& d) { d.velocity.x = kNaN; }, StatusCode::kInvalidArgument, "velocity.x", "nan"},
      {[](BodyDesc& d) { d.position.x = 150.0; }, StatusCode::kOutOfRange, "position.x", "150"},
      {[](BodyDesc& d) { d.id = 2; }, StatusCode::kAlreadyExists, "id", "2"},
      {[](BodyDesc& d) { d.id = 4; }, StatusCode::kAlreadyExists, "id", "4"},
  };
  for (const Case& c : cases) {
    std::vector<BodyDesc> batch{body_at(20.0, 80.0), body_at(22.0, 80.0), body_at(24.0, 80.0), body_at(26.0, 80.0),
                                body_at(28.0, 80.0)};
    c.spoil(batch[3]);
    const std::string field = std::string("bodies[3].") + c.item_field;
    expect_rejected([&] { return w().add_bodies(batch); }, c.code, field, {c.value}, field);
    // The index and the body's own field, for a caller that names the body its own way.
    const Status st = w().add_bodies(batch);
    EXPECT_EQ(st.index(), 3u);
    EXPECT_EQ(st.batch(), "bodies");
    EXPECT_EQ(st.item_field(), c.item_field);
  }
}

TEST_F(Validation, MoreThanMaxBodiesIsRejected) {
  // 9 bodies, max 64: 55 more fit, 56 do not.
  std::vector<BodyDesc> batch;
  for (int i = 0; i < 56; ++i) batch.push_back(body_at(5.0 + 1.5 * (i % 50), 70.0 + 5.0 * (i / 50)));
  expect_rejected([&] { return w().add_bodies(batch); }, StatusCode::kResourceExhausted, "bodies",
                  {"max_bodies", "64"}, "batch over max_bodies");
  EXPECT_FALSE(w().add_bodies(batch).index()) << "the batch as a whole, no one body";
  batch.pop_back();
  ASSERT_TRUE(w().add_bodies(batch).ok());
  ASSERT_EQ(w().size(), 64u);
  expect_rejected([&] { return w().add_body(body_at(40.0, 90.0)); }, StatusCode::kResourceExhausted, "bodies",
                  {"max_bodies", "64"}, "one over max_bodies");
}

TEST_F(Validation, BadParamsAreRejected) {
  struct Case {
    const char* what;
    void (*spoil)(Params&);
    StatusCode code;
    const char* field;
    const char* value;
  };
  const Case cases[] = {
      {"NaN gravity", [](Params& p) { p.gravity.y = kNaN; }, StatusCode::kInvalidArgument, "gravity", "nan"},
      {"Inf gravity", [](Params& p) { p.gravity.x = kInf; }, StatusCode::kInvalidArgument, "gravity", "inf"},
      {"restitution > 1", [](Params& p) { p.restitution = 1.5; }, StatusCode::kInvalidArgument, "restitution", "1.5"},
      {"restitution < 0", [](Params& p) { p.restitution = -0.25; }, StatusCode::kInvalidArgument, "restitution",
       "-0.25"},
      {"NaN restitution", [](Params& p) { p.restitution = kNaN; }, StatusCode::kInvalidArgument, "restitution", "nan"},
      {"substeps 0", [](Params& p) { p.substeps = 0; }, StatusCode::kInvalidArgument, "substeps", "0"},
      {"substeps 65", [](Params& p) { p.substeps = 65; }, StatusCode::kInvalidArgument, "substeps", "65"},
      {"dt 0", [](Params& p) { p.dt = 0.0; }, StatusCode::kInvalidArgument, "dt", "0"},
      {"dt < 0", [](Params& p) { p.dt = -0.125; }, StatusCode::kInvalidArgument, "dt", "-0.125"},
      {"NaN dt", [](Params& p) { p.dt = kNaN; }, StatusCode::kInvalidArgument, "dt", "nan"},
      {"negative damping", [](Params& p) { p.linear_damping = -0.5; }, StatusCode::kInvalidArgument, "linear_damping",
       "-0.5"},
      {"Inf damping", [](Params& p) { p.linear_damping = kInf; }, StatusCode::kInvalidArgument, "linear_damping",
       "inf"},
      {"density 0", [](Params& p) { p.density = 0.0; }, StatusCode::kInvalidArgument, "density", "0"},
      {"unknown solver", [](Params& p) { p.solver = static_cast<Solver>(7); }, StatusCode::kInvalidArgument, "solver",
       "7"},
      {"theta 0", [](Params& p) { p.mutual.theta = 0.0; }, StatusCode::kInvalidArgument, "mutual.theta", "0"},
      {"NaN bounds", [](Params& p) { p.bounds.max.x = kNaN; }, StatusCode::kInvalidArgument, "bounds.max", "nan"},
      {"inverted bounds", [](Params& p) { p.bounds.min.y = 200.0; }, StatusCode::kInvalidArgument, "bounds", "200"},
      {"bounds leave a body outside", [](Params& p) { p.bounds.max = {40.0, 100.0}; }, StatusCode::kOutOfRange,
       "bounds", "40"},
      {"bounds leave a body outside by its radius", [](Params& p) { p.bounds.min = {10.25, 0.0}; },
       StatusCode::kOutOfRange, "bounds", "10.25"},
  };
  for (const Case& c : cases) {
    Params p = w().params();
    c.spoil(p);
    expect_rejected([&] { return w().set_params(p); }, c.code, c.field, {c.value}, c.what);
  }
  // Each case above spoils one field of otherwise valid parameters.
  Params ok = w().params();
  ok.substeps = 64;
  ok.restitution = 0.0;
  EXPECT_TRUE(w().set_params(ok).ok());
}

// A path is composed, never glued into the words: the message stays
// "FIELD: REASON" at every level, and the index survives.
TEST(StatusPaths, ComposeUpwards) {
  const Status plain{StatusCode::kNotFound, "no such thing"};
  EXPECT_EQ(plain.field(), "");
  EXPECT_EQ(plain.message(), "no such thing");
  EXPECT_EQ(plain.within("spawn").field(), "") << "a failure with no field gains none";

  const Status leaf{StatusCode::kInvalidArgument, "theta", "must be in (0, 1.5], got 0"};
  const Status up = leaf.within("mutual").within("params").within("set_params");
  EXPECT_EQ(up.field(), "set_params.params.mutual.theta");
  EXPECT_EQ(up.message(), "set_params.params.mutual.theta: must be in (0, 1.5], got 0");
  EXPECT_EQ(up.reason(), leaf.reason());
  EXPECT_FALSE(up.index());

  const Status item = Status{StatusCode::kInvalidArgument, "radius", "must be > 0"}.in_batch("bodies", 3);
  EXPECT_EQ(item.field(), "bodies[3].radius");
  const Status spawn = item.within("spawn");
  EXPECT_EQ(spawn.field(), "spawn.bodies[3].radius");
  EXPECT_EQ(spawn.index(), 3u);
  EXPECT_EQ(spawn.batch(), "spawn.bodies");
  EXPECT_EQ(spawn.item_field(), "radius");
  // Renamed to another caller's list: the index and the item's field stay.
  EXPECT_EQ(spawn.in_batch("radius", 3).field(), "radius[3].radius");
  const Status whole = Status{StatusCode::kNotFound, "", "no body with id 9"}.in_batch("ids", 2);
  EXPECT_EQ(whole.field(), "ids[2]");
  EXPECT_EQ(whole.within("remove").message(), "remove.ids[2]: no body with id 9");
}

}  // namespace
}  // namespace carom
