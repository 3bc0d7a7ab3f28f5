// Session: handshake, authorisation, and the two-lane writer; TcpSession:
// its transport over TCP. Reads: bytes from the socket (FrameDecoder
// enforces the frame limit before buffering a frame). Writes: one frame at a
// time; queued messages first, then the stream slot. Runs on the socket's
// strand only.
//
// The read path, one handler a step: do_read -> on_read (bytes in) ->
// read_frames (length prefix and limit) -> on_frame (the ClientMessage) ->
// on_hello / on_command. The write path: on_deliver / on_deliver_stream /
// on_goodbye (posted by other threads) -> queue -> do_write -> write (the
// transport) -> on_write. Closing: fail (an Error, then linger) or close.

#include "session.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <cmath>
#include <functional>
#include <tuple>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <spdlog/spdlog.h>

#include "carom/format.hpp"
#include "carom/proto/framing.hpp"
#include "hub.hpp"

namespace carom::server {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

// A controller that does not read its results gets cut off past this.
constexpr std::size_t kMaxQueuedBytes = std::size_t{64} << 20;
// Commands a session may have waiting for the simulation thread.
constexpr int kMaxInFlight = 1024;
// Frame limit before the Hello and for viewers (who send nothing big):
// controllers get --max-frame-bytes.
constexpr std::size_t kMaxViewerFrame = std::size_t{64} << 10;
constexpr std::size_t kMaxReadBuffer = std::size_t{64} << 10;

std::shared_ptr<const std::string> frame_of(const v1::ServerMessage& message) {
  return std::make_shared<const std::string>(proto::encode_frame(message));
}

// The result of a command refused here, before the simulation thread sees it.
v1::ServerMessage refused(const v1::Command& command, v1::ErrorCode code, const std::string& message) {
  v1::ServerMessage m;
  v1::CommandResult& r = *m.mutable_result();
  r.set_request_id(command.request_id());
  r.set_code(code);
  r.set_message(message);
  return m;
}

// Constant-time comparison, so the token cannot be guessed byte by byte.
bool same_token(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

void set_socket_options(tcp::socket& socket) {
  boost::system::error_code ec;
  socket.set_option(tcp::no_delay(true), ec);
  socket.set_option(asio::socket_base::keep_alive(true), ec);
  // An idle dead peer is noticed within seconds: first probe after 2 s idle,
  // then every second, given up after 3. A peer that stops reading (alive or
  // not) is the stall timeout's (deliver_stream): a TCP user timeout would
  // also reset a live viewer whose receive window is merely full.
  const int fd = socket.native_handle();
  int idle = 2, interval = 1, count = 3;
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

bool is_loopback_peer(const tcp::socket& socket) {
  boost::system::error_code ec;
  const auto endpoint = socket.remote_endpoint(ec);
  return !ec && (endpoint.address().is_loopback() ||
                 (endpoint.address().is_v6() && endpoint.address().to_v6().is_v4_mapped() &&
                  asio::ip::make_address_v4(asio::ip::v4_mapped, endpoint.address().to_v6()).is_loopback()));
}

std::shared_ptr<const std::string> error_frame(v1::ErrorCode code, const std::string& text,
                                               const std::string& field) {
  v1::ServerMessage m;
  m.mutable_error()->set_code(code);
  m.mutable_error()->set_message(text);
  m.mutable_error()->set_field(field);
  return frame_of(m);
}

std::string peer_name(const tcp::socket& socket) {
  boost::system::error_code ec;
  const auto endpoint = socket.remote_endpoint(ec);
  return ec ? std::string("unknown peer") : endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
}

Session::Session(asio::any_io_executor executor, Hub& hub, std::string peer, bool loopback)
    : executor_(std::move(executor)), hub_(hub), timer_(executor_), rate_timer_(executor_), peer_(std::move(peer)), loopback_(loopback) {}

Session::~Session() = default;

std::size_t Session::initial_frame_limit() const { return std::min(hub_.options().max_frame, kMaxViewerFrame); }

void Session::start() { asio::dispatch(executor_, std::bind_front(&Session::on_start, shared_from_this())); }

void Session::on_start() {
  open();
  if (!hub_.add(shared_from_this(), &id_)) {
    if (hub_.shutting_down()) {
      fail(v1::SHUTTING_DOWN, "the server is shutting down");
      return;
    }
    const auto max = hub_.options().max_clients;
    spdlog::warn("refused {}: server full ({} clients, --max-clients)", peer_, max);
    fail(v1::SERVER_FULL, "server full: " + std::to_string(max) + " clients connected (--max-clients)");
    return;
  }
  spdlog::info("session {} connected from {}", id_, peer_);
  timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(hub_.options().handshake_timeout_s)));
  timer_.async_wait(std::bind_front(&Session::on_handshake_timeout, shared_from_this()));
  do_read();
}

void Session::on_handshake_timeout(boost::system::error_code ec) {
  if (!ec && phase_ == Phase::kHandshake) {
    fail(v1::TIMEOUT, "no Hello within " + std::to_string(hub_.options().handshake_timeout_s) + " s");
  }
}

// --- The read path ---

void Session::on_frame(std::string_view bytes) {
  v1::ClientMessage message;
  if (!message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    fail(v1::MALFORMED_FRAME, "frame of " + std::to_string(bytes.size()) + " bytes is not a ClientMessage");
    return;
  }
  switch (message.kind_case()) {
    case v1::ClientMessage::kHello:
      if (phase_ != Phase::kHandshake) {
        fail(v1::PROTOCOL_VIOLATION, "second Hello on one connection");
        return;
      }
      on_hello(message.hello());
      return;
    case v1::ClientMessage::kCommand:
      if (phase_ != Phase::kActive) {
        fail(v1::PROTOCOL_VIOLATION, "Command before Hello: send Hello first");
        return;
      }
      on_command(std::move(*message.mutable_command()));
      return;
    case v1::ClientMessage::KIND_NOT_SET:
      break;
  }
  fail(v1::MALFORMED_FRAME, "ClientMessage with neither hello nor command (unknown field number?)");
}

void Session::on_hello(const v1::Hello& hello) {
  const ServerOptions& opt = hub_.options();
  if (hello.protocol_version() != proto::kProtocolVersion) {
    fail(v1::UNSUPPORTED_VERSION,
         std::to_string(hello.protocol_version()) + " is not supported; this server speaks " +
             std::to_string(proto::kProtocolVersion),
         "hello.protocol_version");
    return;
  }
  if (hello.role() != v1::ROLE_VIEWER && hello.role() != v1::ROLE_CONTROLLER) {
    fail(v1::INVALID_ARGUMENT,
         "must be ROLE_VIEWER or ROLE_CONTROLLER, got " + std::to_string(static_cast<int>(hello.role())), "hello.role");
    return;
  }
  if (const double rate = hello.wishes().max_rate_hz(); !(std::isfinite(rate) && rate >= 0.0)) {
    fail(v1::INVALID_ARGUMENT, "must be finite and >= 0 (0: every snapshot), got " + format_number(rate),
         "hello.wishes.max_rate_hz");
    return;
  }
  CompactKey compact;
  compact.velocities = hello.wishes().velocities();
  for (auto [name, value, out] : {std::tuple{"position_quantum", hello.wishes().position_quantum(), &compact.position_quantum},
                                  std::tuple{"velocity_quantum", hello.wishes().velocity_quantum(), &compact.velocity_quantum}}) {
    if (value == 0.0) continue;  // the default, 1 mm (/s)
    if (!(value >= kMinQuantum && value <= kMaxQuantum)) {
      fail(v1::INVALID_ARGUMENT,
           fmt::format("must be 0 (the default, 0.001) or in [{}, {}], got {}", format_number(kMinQuantum),
                       format_number(kMaxQuantum), format_number(value)),
           fmt::format("hello.wishes.{}", name));
      return;
    }
    *out = value;
  }
  if (const double speed = hello.wishes().min_event_speed(); !(std::isfinite(speed) && speed >= 0.0)) {
    fail(v1::INVALID_ARGUMENT, "must be finite and >= 0 (m/s; 0: every event), got " + format_number(speed),
         "hello.wishes.min_event_speed");
    return;
  }
  if (hello.role() == v1::ROLE_CONTROLLER) {
    if (!opt.control_refused.empty()) {
      spdlog::warn("session {} ({}): refused control: {}", id_, peer_, opt.control_refused);
      fail(v1::PERMISSION_DENIED, opt.control_refused, "hello.role");
      return;
    }
    if (!opt.token.empty()) {
      if (!same_token(hello.token(), opt.token)) {
        spdlog::warn("session {} ({}): refused control: {} token", id_, peer_,
                     hello.token().empty() ? "missing" : "wrong");
        fail(v1::UNAUTHENTICATED, hello.token().empty() ? "this server needs a token for control" : "wrong token",
             "hello.token");
        return;
      }
    } else if (!loopback_) {
      spdlog::warn("session {} ({}): refused control from a non-loopback peer without a token", id_, peer_);
      fail(v1::PERMISSION_DENIED, "control from " + peer_ +
                                      " refused: the server has no token, so it accepts control only from loopback "
                                      "(start it with --token or CAROM_TOKEN)");
      return;
    }
    control_ = true;
    set_frame_limit(opt.max_frame);
  }
  timer_.cancel();
  phase_ = Phase::kActive;
  const bool wants = hello.role() == v1::ROLE_VIEWER || hello.has_wishes();
  max_rate_hz_ = hello.wishes().max_rate_hz();  // checked above: finite, >= 0
  spdlog::info("session {} ({}): {} '{}'", id_, peer_, control_ ? "controller" : "viewer", hello.client_name());

  const PublicState state = hub_.get_public();
  v1::ServerMessage m;
  v1::Welcome& w = *m.mutable_welcome();
  w.set_server_version(CAROM_VERSION);
  w.set_protocol_version(proto::kProtocolVersion);
  *w.mutable_params() = state.params;
  w.set_tick_hz(state.tick_hz);
  w.set_session_id(id_);
  w.set_tick(state.tick);
  w.set_paused(state.paused);
  w.set_control(control_);
  queue(frame_of(m));
  if (wants) {
    subscribed_ = true;
    const int variant = snapshot_variant(hello.wishes());
    hub_.subscribe(id_, variant, stream_key(variant, compact, hello.wishes()));
  }
}

void Session::on_command(v1::Command command) {
  // Read-only, so viewers may ask; answered here, on this connection's
  // strand: the simulation thread never waits on the file system.
  if (command.has_list_scenarios() && !hub_.options().forward_list_scenarios) {
    v1::ServerMessage m;
    v1::CommandResult& r = *m.mutable_result();
    r.set_request_id(command.request_id());
    std::string why;
    r.set_code(hub_.scenarios().list(r.mutable_scenarios(), &why));
    if (r.code() != v1::OK) {
      r.clear_payload();
      r.set_message("list_scenarios: " + why);
    }
    r.set_tick(hub_.get_public().tick);
    queue(frame_of(m));
    return;
  }
  if (!control_ && !command.has_list_scenarios()) {
    v1::ServerMessage m = refused(command, v1::PERMISSION_DENIED,
                                  "viewers are read-only: connect with role ROLE_CONTROLLER to send commands");
    m.mutable_result()->set_tick(hub_.get_public().tick);
    queue(frame_of(m));
    return;
  }
  if (in_flight.load() >= kMaxInFlight) {
    queue(frame_of(refused(command, v1::RESOURCE_EXHAUSTED,
                           "too many commands in flight (" + std::to_string(kMaxInFlight) + "): wait for results")));
    return;
  }
  in_flight.fetch_add(1);
  hub_.submit(shared_from_this(), std::move(command));
}

// --- The write path ---

void Session::deliver(std::shared_ptr<const std::string> frame) {
  asio::post(executor_, std::bind_front(&Session::queue, shared_from_this(), std::move(frame)));
}

void send_result(const std::weak_ptr<Session>& to, v1::CommandResult result) {
  auto session = to.lock();
  if (!session) return;
  session->in_flight.fetch_sub(1);
  v1::ServerMessage m;
  *m.mutable_result() = std::move(result);
  session->deliver(frame_of(m));
}

void Session::deliver_stream(std::shared_ptr<const std::string> frame, bool snapshot,
                             std::shared_ptr<const BodyTableFrame> table) {
  asio::post(executor_, std::bind_front(&Session::on_deliver_stream, shared_from_this(),
                                                     std::move(frame), snapshot, std::move(table)));
}

void Session::on_deliver_stream(std::shared_ptr<const std::string> frame, bool snapshot,
                                std::shared_ptr<const BodyTableFrame> table) {
  const Take take = take_stream(snapshot);
  if (take == Take::kHold) hold(std::move(frame), nullptr, std::move(table));
  if (take != Take::kTake) return;
  stream_ = std::move(frame);
  stream_compact_.reset();
  stream_table_ = std::move(table);
  stream_is_snapshot_ = snapshot;
  do_write();
}

void Session::deliver_compact(std::shared_ptr<const CompactSnapshot> snapshot,
                              std::shared_ptr<const BodyTableFrame> table) {
  asio::post(executor_, std::bind_front(&Session::on_deliver_compact, shared_from_this(),
                                                     std::move(snapshot), std::move(table)));
}

void Session::on_deliver_compact(std::shared_ptr<const CompactSnapshot> snapshot,
                                 std::shared_ptr<const BodyTableFrame> table) {
  const Take take = take_stream(true);
  if (take == Take::kHold) hold(nullptr, std::move(snapshot), std::move(table));
  if (take != Take::kTake) return;
  stream_.reset();
  stream_compact_ = std::move(snapshot);
  stream_table_ = std::move(table);
  stream_is_snapshot_ = true;
  do_write();
}

Session::Take Session::take_stream(bool snapshot) {
  if (phase_ != Phase::kActive) return Take::kDrop;
  const double stall = hub_.options().stall_timeout_s;
  if (writing_ && stall > 0.0 &&
      std::chrono::steady_clock::now() - write_started_ > std::chrono::duration<double>(stall)) {
    spdlog::warn("session {} ({}): stalled: a write unfinished for over {} s (--stall-timeout); disconnecting", id_,
                 peer_, stall);
    close();
    return Take::kDrop;
  }
  if (snapshot && max_rate_hz_ > 0) {
    const auto now = std::chrono::steady_clock::now();
    // 0.9: tolerate tick jitter so a 30 Hz wish on a 60 Hz server gets 30.
    if (now - last_snapshot_ < std::chrono::duration<double>(0.9 / max_rate_hz_)) return Take::kHold;
    last_snapshot_ = now;
  }
  const bool occupied = stream_ || stream_compact_;
  // A heartbeat never replaces a snapshot (while paused it may be the last).
  if (!snapshot && occupied) return Take::kDrop;
  if (occupied && stream_is_snapshot_) hub_.snapshots_skipped.fetch_add(1);
  if (snapshot) {  // a newer snapshot goes: the held one is not needed
    held_.reset();
    held_compact_.reset();
    held_table_.reset();
    rate_timer_.cancel();
  }
  return Take::kTake;
}

void Session::hold(std::shared_ptr<const std::string> frame, std::shared_ptr<const CompactSnapshot> compact,
                   std::shared_ptr<const BodyTableFrame> table) {
  held_ = std::move(frame);
  held_compact_ = std::move(compact);
  held_table_ = std::move(table);
  rate_timer_.expires_at(last_snapshot_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                              std::chrono::duration<double>(2.0 / max_rate_hz_)));
  rate_timer_.async_wait(std::bind_front(&Session::on_rate_timer, shared_from_this()));
}

void Session::on_rate_timer(boost::system::error_code ec) {
  if (ec || phase_ != Phase::kActive || (!held_ && !held_compact_)) return;
  auto frame = std::move(held_);
  auto compact = std::move(held_compact_);
  auto table = std::move(held_table_);
  if (compact) {
    on_deliver_compact(std::move(compact), std::move(table));
  } else {
    on_deliver_stream(std::move(frame), true, std::move(table));
  }
}

void Session::clear_stream() {
  stream_.reset();
  stream_compact_.reset();
  stream_table_.reset();
}

void Session::goodbye(const std::string& reason) {
  asio::post(executor_, std::bind_front(&Session::on_goodbye, shared_from_this(), reason));
}

void Session::on_goodbye(const std::string& reason) {
  if (phase_ == Phase::kClosed || phase_ == Phase::kClosing) return;
  v1::ServerMessage m;
  m.mutable_goodbye()->set_reason(reason);
  clear_stream();
  queue(frame_of(m));
  phase_ = Phase::kClosing;
  closing_code_ = v1::SHUTTING_DOWN;
  timer_.expires_after(std::chrono::seconds(1));
  timer_.async_wait(std::bind_front(&Session::on_grace_timeout, shared_from_this()));
}

void Session::queue(std::shared_ptr<const std::string> frame) {
  if (phase_ == Phase::kClosed) return;
  // The limit is on the backlog: one large result (a big world) is fine.
  const bool backlog = queued_bytes_ > kMaxQueuedBytes;
  queued_bytes_ += frame->size();
  queue_.push_back(std::move(frame));
  if (backlog) {
    spdlog::warn("session {} ({}): does not read its results ({} bytes queued); closing", id_, peer_, queued_bytes_);
    close();
    return;
  }
  do_write();
}

void Session::do_write() {
  if (writing_ || phase_ == Phase::kClosed || lingering_) return;
  if (!queue_.empty()) {
    writing_ = std::move(queue_.front());
    queue_.pop_front();
    queued_bytes_ -= writing_->size();
  } else if (stream_ || stream_compact_) {
    if (stream_compact_) {
      writing_ = stream_compact_->frame_after(compact_chain_, compact_serial_);
      compact_chain_ = stream_compact_->chain();
      compact_serial_ = stream_compact_->serial();
      stream_compact_.reset();
    } else {
      writing_ = std::move(stream_);
      stream_.reset();
    }
    // A snapshot that refers to a table this peer has not had goes right
    // after the table, in one write.
    if (stream_table_ && stream_table_->epoch != table_sent_) {
      writing_table_ = std::move(stream_table_);
      table_sent_ = writing_table_->epoch;
    }
    stream_table_.reset();
  } else {
    if (phase_ == Phase::kClosing) {
      lingering_ = true;
      linger();
    }
    return;
  }
  write_started_ = std::chrono::steady_clock::now();
  write(writing_table_ ? writing_table_->frame.get() : nullptr, *writing_);
}

void Session::on_write(boost::system::error_code ec, std::size_t) {
  writing_.reset();
  writing_table_.reset();
  if (ec) {
    close();
    return;
  }
  do_write();
}

// --- Closing ---

void Session::fail(v1::ErrorCode code, const std::string& reason, const std::string& field) {
  if (phase_ == Phase::kClosed || phase_ == Phase::kClosing) return;
  const std::string message = field_message(field, reason);
  spdlog::warn("session {} ({}): {}: {}", id_, peer_, v1::ErrorCode_Name(code), message);
  clear_stream();
  queue(error_frame(code, message, field));
  phase_ = Phase::kClosing;
  closing_code_ = code;
  // The peer may not read: close after a grace period whatever happens.
  timer_.expires_after(std::chrono::seconds(2));
  timer_.async_wait(std::bind_front(&Session::on_grace_timeout, shared_from_this()));
}

void Session::on_grace_timeout(boost::system::error_code ec) {
  if (!ec) close();
}

void Session::close() {
  if (phase_ == Phase::kClosed) return;
  const bool registered = id_ != 0;
  phase_ = Phase::kClosed;
  timer_.cancel();
  rate_timer_.cancel();
  held_.reset();
  held_compact_.reset();
  held_table_.reset();
  close_transport();
  queue_.clear();
  clear_stream();
  if (registered) {
    hub_.remove(id_);
    spdlog::info("session {} ({}) disconnected", id_, peer_);
  }
}

}  // namespace carom::server

namespace carom::server {

// --- TcpSession ---

TcpSession::TcpSession(tcp::socket socket, Hub& hub)
    : Session(socket.get_executor(), hub, peer_name(socket), is_loopback_peer(socket)),
      socket_(std::move(socket)),
      decoder_(initial_frame_limit()) {}

void TcpSession::open() { set_socket_options(socket_); }

void TcpSession::do_read() {
  reading_ = true;
  socket_.async_read_some(asio::buffer(read_buffer_), std::bind_front(&TcpSession::on_read, self<TcpSession>()));
}

void TcpSession::on_read(boost::system::error_code ec, std::size_t n) {
  reading_ = false;
  if (closed()) return;
  if (closing()) {
    on_drain(ec, n);
    return;
  }
  if (ec) {
    close();
    return;
  }
  decoder_.append(read_buffer_.data(), n);
  if (n == read_buffer_.size() && n < kMaxReadBuffer) read_buffer_.resize(2 * n);
  if (read_frames()) do_read();
}

bool TcpSession::read_frames() {
  for (;;) {
    std::string_view frame;
    std::uint64_t length = 0;
    const auto r = decoder_.next(&frame, &length);
    if (r == proto::FrameDecoder::Result::kNeedMore) return true;
    if (r == proto::FrameDecoder::Result::kTooLarge) {
      fail(v1::FRAME_TOO_LARGE, "frame of " + std::to_string(length) + " bytes is over the limit of " +
                                    std::to_string(decoder_.max_frame()) + " bytes" +
                                    (control() ? " (--max-frame-bytes)" : " (before Hello and for viewers)"));
      return false;
    }
    if (r == proto::FrameDecoder::Result::kBadPrefix) {
      fail(v1::MALFORMED_FRAME, "frame length prefix is not a valid varint32");
      return false;
    }
    on_frame(frame);
    if (closing() || closed()) return false;
  }
}

void TcpSession::write(const std::string* table, const std::string& frame) {
  // A table and the snapshot that refers to it leave in one write.
  std::array<asio::const_buffer, 2> buffers{asio::buffer(frame), asio::const_buffer()};
  if (table != nullptr) buffers = {asio::buffer(*table), asio::buffer(frame)};
  asio::async_write(socket_, buffers, std::bind_front(&TcpSession::on_write, self<TcpSession>()));
}

void TcpSession::linger() {
  // Closing with unread input would make the kernel send a reset that can
  // discard the Error still in flight: end our side, read until the peer
  // closes (or the grace timer fires), then close.
  boost::system::error_code ec;
  socket_.shutdown(tcp::socket::shutdown_send, ec);
  drain();
}

void TcpSession::drain() {
  if (reading_ || closed()) return;
  reading_ = true;
  socket_.async_read_some(asio::buffer(read_buffer_), std::bind_front(&TcpSession::on_drain, self<TcpSession>()));
}

void TcpSession::on_drain(boost::system::error_code ec, std::size_t) {
  reading_ = false;
  if (ec) {
    close();
  } else {
    drain();
  }
}

void TcpSession::close_transport() {
  boost::system::error_code ec;
  socket_.shutdown(tcp::socket::shutdown_both, ec);
  socket_.close(ec);
}

}  // namespace carom::server
