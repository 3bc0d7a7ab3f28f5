// Blocking client connection. Sockets are Asio's (name resolution, connect);
// timeouts come from poll() on the native handle, since blocking Asio calls
// have none.

#include "carom/client/connection.hpp"

#include "carom/proto/compact.hpp"

#include <poll.h>
#include <time.h>

#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <charconv>
#include <cmath>
#include <span>

namespace carom::client {

namespace asio = boost::asio;
using asio::ip::tcp;

bool parse_address(std::string_view text, Address* out, std::string* error) {
  Address a;
  std::string_view host = text, port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos) {
      *error = "address '" + std::string(text) + "': missing ']'";
      return false;
    }
    host = text.substr(1, close - 1);
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') {
        *error = "address '" + std::string(text) + "': expected ':' after ']'";
        return false;
      }
      port = text.substr(close + 2);
    }
  } else if (const auto colon = text.rfind(':'); colon != std::string_view::npos) {
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (!host.empty()) a.host = std::string(host);
  if (!port.empty() || text.ends_with(":")) {
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc{} || end != port.data() + port.size() || value == 0 || value > 65535) {
      *error = "address '" + std::string(text) + "': port must be 1..65535";
      return false;
    }
    a.port = static_cast<std::uint16_t>(value);
  }
  *out = a;
  return true;
}

std::string code_name(v1::ErrorCode code) { return v1::ErrorCode_Name(code); }

struct Connection::Impl {
  asio::io_context io;
  tcp::socket socket{io};
  proto::FrameDecoder decoder{proto::kDefaultMaxServerFrame};
  std::array<char, 1 << 16> buffer{};
  StreamDecoder stream;
};

void add_stream_wishes(v1::Hello* hello, bool body_tables, bool compact) {
  if (hello->protocol_version() == 0) hello->set_protocol_version(proto::kProtocolVersion);
  const bool snapshots = hello->role() == v1::ROLE_VIEWER || hello->has_wishes();
  if (body_tables && snapshots && !hello->wishes().omit_bodies()) hello->mutable_wishes()->set_body_tables(true);
  if (body_tables && compact && snapshots && !hello->wishes().omit_bodies()) {
    hello->mutable_wishes()->set_compact(true);
    hello->mutable_wishes()->set_compact_events(true);  // decoded in receive()
  }
}

struct StreamDecoder::State {
  v1::BodyTable table;  // the latest body table (epoch 0: none yet)
  // The compact stream's state: the last compact snapshot's tick and its
  // decoded positions and velocities (what the next one predicts from).
  std::uint64_t compact_tick = 0;
  bool have_compact = false;
  proto::Track positions, velocities;

  std::vector<proto::CompactEvent> events;  // scratch

  Result take(v1::ServerMessage* out, std::string* error);
  // Fills s's x, y (vx, vy) from s.compact. Empty string or what is wrong.
  std::string decode_compact(v1::Snapshot& s);
  // Fills s's events from s.compact_events, after decode_compact.
  std::string decode_events(v1::Snapshot& s);
};

StreamDecoder::StreamDecoder() : state_(std::make_unique<State>()) {}
StreamDecoder::~StreamDecoder() = default;
StreamDecoder::StreamDecoder(StreamDecoder&&) noexcept = default;
StreamDecoder& StreamDecoder::operator=(StreamDecoder&&) noexcept = default;

void StreamDecoder::reset() { *state_ = State(); }

StreamDecoder::Result StreamDecoder::take(v1::ServerMessage* message, std::string* error) {
  return state_->take(message, error);
}

std::string StreamDecoder::State::decode_events(v1::Snapshot& s) {
  const v1::CompactEvents& c = s.compact_events();
  if (std::string why = proto::decode_events(c.events(), c.impulses(), s.tick(), positions, &events); !why.empty())
    return why;
  // Speeds come only with wishes.event_speeds, one an event.
  if (c.speed_size() != 0 && static_cast<std::size_t>(c.speed_size()) != events.size())
    return std::to_string(c.speed_size()) + " speeds for " + std::to_string(events.size()) + " events";
  const double quantum = s.compact().position_quantum();
  s.mutable_events()->Reserve(static_cast<int>(events.size()));
  for (std::size_t i = 0; i < events.size(); ++i) {
    const proto::CompactEvent& e = events[i];
    v1::CollisionEvent& out = *s.add_events();
    if (c.speed_size() != 0) out.set_speed(c.speed(static_cast<int>(i)));
    out.set_a(e.a);
    out.set_b(e.b);
    out.mutable_point()->set_x(static_cast<double>(e.x) * quantum);
    out.mutable_point()->set_y(static_cast<double>(e.y) * quantum);
    out.mutable_impulse()->set_x(proto::from_bfloat16(e.ix));
    out.mutable_impulse()->set_y(proto::from_bfloat16(e.iy));
    out.set_tick(e.tick);
  }
  return {};
}

std::string StreamDecoder::State::decode_compact(v1::Snapshot& s) {
  const v1::CompactBodies& c = s.compact();
  if (!(c.position_quantum() > 0.0) || !std::isfinite(c.position_quantum()))
    return "position_quantum " + std::to_string(c.position_quantum()) + " is not > 0";
  const bool key = !c.has_baseline_tick();
  if (!key && (!have_compact || c.baseline_tick() != compact_tick))
    return "it is coded against tick " + std::to_string(c.baseline_tick()) + ", but the last compact snapshot here was " +
           (have_compact ? "tick " + std::to_string(compact_tick) : std::string("none"));
  const std::span<const std::uint32_t> ids(table.id().data(), static_cast<std::size_t>(table.id_size()));
  proto::Track next;
  std::string error = proto::decode_track(proto::Channel::kPosition, key ? nullptr : &positions, ids, c.positions(), &next);
  if (!error.empty()) return "positions: " + error;
  positions.id.swap(next.id), positions.x.swap(next.x), positions.y.swap(next.y);
  positions.dx.swap(next.dx), positions.dy.swap(next.dy);
  const bool with_velocities = c.velocity_quantum() != 0.0;  // set only with velocities
  if (with_velocities) {
    if (!(c.velocity_quantum() > 0.0) || !std::isfinite(c.velocity_quantum()))
      return "velocity_quantum " + std::to_string(c.velocity_quantum()) + " is not > 0";
    error = proto::decode_track(proto::Channel::kVelocity, key ? nullptr : &velocities, ids, c.velocities(), &next);
    if (!error.empty()) return "velocities: " + error;
    velocities.id.swap(next.id), velocities.x.swap(next.x), velocities.y.swap(next.y);
  }
  compact_tick = s.tick();
  have_compact = true;
  const auto n = static_cast<int>(ids.size());
  auto fill = [n](const std::vector<std::int64_t>& q, double quantum, google::protobuf::RepeatedField<float>* out) {
    out->Resize(n, 0.0f);
    for (int i = 0; i < n; ++i) out->Set(i, static_cast<float>(static_cast<double>(q[static_cast<std::size_t>(i)]) * quantum));
  };
  fill(positions.x, c.position_quantum(), s.mutable_x());
  fill(positions.y, c.position_quantum(), s.mutable_y());
  if (with_velocities) {
    fill(velocities.x, c.velocity_quantum(), s.mutable_vx());
    fill(velocities.y, c.velocity_quantum(), s.mutable_vy());
  }
  return {};
}

StreamDecoder::Result StreamDecoder::State::take(v1::ServerMessage* out, std::string* error) {
  if (out->has_body_table()) {
    table.Swap(out->mutable_body_table());
    if (table.id_size() != table.radius_size()) {
      *error = "body table " + std::to_string(table.epoch()) + " has " + std::to_string(table.id_size()) +
               " ids but " + std::to_string(table.radius_size()) + " radii";
      return Result::kError;
    }
    return Result::kKept;  // the next message is its snapshot
  }
  if (out->has_snapshot() && out->snapshot().body_table() != 0) {
    v1::Snapshot& s = *out->mutable_snapshot();
    if (s.has_compact() && s.body_table() == table.epoch()) {
      if (const std::string why = decode_compact(s); !why.empty()) {
        *error = "compact snapshot of tick " + std::to_string(s.tick()) + ": " + why;
        return Result::kError;
      }
      if (s.has_compact_events()) {
        if (const std::string why = decode_events(s); !why.empty()) {
          *error = "compact events of tick " + std::to_string(s.tick()) + ": " + why;
          return Result::kError;
        }
      }
    }
    if (s.body_table() != table.epoch() || s.x_size() != table.id_size()) {
      *error = "snapshot of tick " + std::to_string(s.tick()) + " refers to body table " +
               std::to_string(s.body_table()) + " (" + std::to_string(s.x_size()) +
               " bodies), which this connection does not have";
      return Result::kError;
    }
    *s.mutable_id() = table.id();
    *s.mutable_radius() = table.radius();
  }
  return Result::kMessage;
}

Connection::Connection() : impl_(std::make_unique<Impl>()) {}
Connection::~Connection() = default;
Connection::Connection(Connection&&) noexcept = default;
Connection& Connection::operator=(Connection&&) noexcept = default;

bool Connection::fail(std::string why) {
  error_ = std::move(why);
  return false;
}

bool Connection::connected() const { return impl_->socket.is_open(); }

void Connection::close() {
  boost::system::error_code ec;
  impl_->socket.shutdown(tcp::socket::shutdown_both, ec);
  impl_->socket.close(ec);
}

int Connection::native_handle() { return connected() ? impl_->socket.native_handle() : -1; }

bool Connection::open(const Address& address) {
  close();
  impl_->decoder = proto::FrameDecoder(proto::kDefaultMaxServerFrame);
  impl_->stream.reset();
  boost::system::error_code ec;
  tcp::resolver resolver(impl_->io);
  const auto endpoints = resolver.resolve(address.host, std::to_string(address.port), ec);
  if (ec) return fail("cannot resolve " + address.host + ": " + ec.message());
  asio::connect(impl_->socket, endpoints, ec);
  if (ec) return fail("cannot connect to " + address.host + ":" + std::to_string(address.port) + ": " + ec.message());
  impl_->socket.set_option(tcp::no_delay(true), ec);
  return true;
}

bool Connection::connect(const Address& address, v1::Hello hello, double timeout_s) {
  if (!open(address)) return false;
  add_stream_wishes(&hello, body_tables_, compact_);
  v1::ClientMessage message;
  *message.mutable_hello() = std::move(hello);
  if (!send(message)) return false;
  v1::ServerMessage reply;
  if (!receive(&reply, timeout_s)) {
    close();
    return false;
  }
  if (reply.has_error()) {
    close();
    return fail("server refused: " + code_name(reply.error().code()) + ": " + reply.error().message());
  }
  if (!reply.has_welcome()) {
    close();
    return fail("server did not answer with a Welcome");
  }
  welcome_ = reply.welcome();
  return true;
}

bool Connection::send_raw(std::string_view bytes) {
  if (!connected()) return fail("not connected");
  boost::system::error_code ec;
  asio::write(impl_->socket, asio::buffer(bytes.data(), bytes.size()), ec);
  if (ec) {
    close();
    return fail("send failed: " + ec.message());
  }
  return true;
}

bool Connection::send(const v1::ClientMessage& message) { return send_raw(proto::encode_frame(message)); }

bool Connection::receive(v1::ServerMessage* out, double timeout_s) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    std::string_view frame;
    std::uint64_t length = 0;
    switch (impl_->decoder.next(&frame, &length)) {
      case proto::FrameDecoder::Result::kFrame:
        if (!out->ParseFromArray(frame.data(), static_cast<int>(frame.size()))) {
          close();
          return fail("unreadable message from the server");
        }
        switch (std::string why; impl_->stream.take(out, &why)) {
          case StreamDecoder::Result::kMessage:
            break;
          case StreamDecoder::Result::kKept:
            ++body_tables_received_;
            continue;
          case StreamDecoder::Result::kError:
            close();
            return fail(std::move(why));
        }
        return true;
      case proto::FrameDecoder::Result::kTooLarge:
        close();
        return fail("server frame of " + std::to_string(length) + " bytes is over the client limit");
      case proto::FrameDecoder::Result::kBadPrefix:
        close();
        return fail("bad frame prefix from the server");
      case proto::FrameDecoder::Result::kNeedMore:
        break;
    }
    if (!connected()) return fail("not connected");
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return fail("timed out waiting for the server");
    pollfd pfd{impl_->socket.native_handle(), POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left, 1 << 30)));
    if (ready == 0) return fail("timed out waiting for the server");
    if (ready < 0) continue;  // EINTR
    boost::system::error_code ec;
    const std::size_t n = impl_->socket.read_some(asio::buffer(impl_->buffer), ec);
    if (ec) {
      close();
      return fail(ec == asio::error::eof ? "the server closed the connection" : "receive failed: " + ec.message());
    }
    bytes_received_ += n;
    impl_->decoder.append(impl_->buffer.data(), n);
  }
}

bool Connection::call(v1::Command command, v1::CommandResult* result, double timeout_s) {
  using Clock = std::chrono::steady_clock;
  if (command.request_id() == 0) command.set_request_id(next_request_++);
  const std::uint64_t id = command.request_id();
  v1::ClientMessage message;
  *message.mutable_command() = std::move(command);
  if (!send(message)) return false;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  v1::ServerMessage reply;
  for (;;) {
    const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    if (left <= 0) return fail("timed out waiting for the result of request " + std::to_string(id));
    if (!receive(&reply, left)) return false;
    if (reply.has_result() && reply.result().request_id() == id) {
      *result = std::move(*reply.mutable_result());
      return true;
    }
    if (reply.has_error()) {
      close();
      return fail("server error: " + code_name(reply.error().code()) + ": " + reply.error().message());
    }
    if (reply.has_goodbye()) {
      close();
      return fail("server said goodbye: " + reply.goodbye().reason());
    }
  }
}

}  // namespace carom::client
