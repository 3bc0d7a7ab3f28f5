#pragma once
// Protocol commands the server suites build again and again.

#include "carom/v1/protocol.pb.h"

namespace carom::test {

/// A spawn command for one body at rest.
inline v1::Command spawn_body(double x, double y, double radius) {
  v1::Command c;
  v1::Body& b = *c.mutable_spawn()->add_bodies();
  b.mutable_position()->set_x(x);
  b.mutable_position()->set_y(y);
  b.set_radius(radius);
  return c;
}

}  // namespace carom::test
