// WebSocketSession: Session's transport over a WebSocket. Reads: parts of a
// message into a buffer that never holds more than the frame limit plus one
// read, so an oversized message is refused with FRAME_TOO_LARGE like a TCP
// frame; Beast's own message limit is off, since it would close the
// connection without our Error. Writes: the shared delimited frames as they
// are, minus their varint prefix (a buffer offset, no copy), one WebSocket
// message each; a body table and its snapshot are two messages. Runs on the
// socket's strand only.

#include "websocket_session.hpp"

#include <algorithm>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <chrono>
#include <functional>
#include <spdlog/spdlog.h>

#include "carom/proto/framing.hpp"

namespace carom::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using asio::ip::tcp;

namespace {

// A read takes at most this much at a time (controllers' large spawns come
// in several reads).
constexpr std::size_t kReadChunk = std::size_t{64} << 10;
// A message buffer over this after a large command goes back to the system.
constexpr std::size_t kKeepBuffer = std::size_t{64} << 10;

// A delimited frame's message bytes: past its varint32 length.
asio::const_buffer payload(const std::string& frame) {
  std::uint64_t length = 0;
  const int prefix = std::max(0, proto::read_length_prefix(frame, &length));
  return asio::buffer(frame.data() + prefix, frame.size() - static_cast<std::size_t>(prefix));
}

}  // namespace

WebSocketSession::WebSocketSession(tcp::socket socket, Hub& hub)
    : Session(socket.get_executor(), hub, peer_name(socket), is_loopback_peer(socket)),
      ws_(std::move(socket)),
      frame_limit_(initial_frame_limit()) {}

void WebSocketSession::accept(beast::http::request<beast::http::string_body> request) {
  set_socket_options(ws_.next_layer());
  // Hello's own timeout and the stall timeout watch the session; Beast's
  // timer only bounds the opening and closing handshakes.
  websocket::stream_base::timeout timeout{};
  timeout.handshake_timeout = std::chrono::seconds(5);
  timeout.idle_timeout = websocket::stream_base::none();
  timeout.keep_alive_pings = false;
  ws_.set_option(timeout);
  ws_.set_option(websocket::stream_base::decorator(
      [](websocket::response_type& response) { response.set(beast::http::field::server, "carom-server"); }));
  ws_.binary(true);
  // One protobuf message, one WebSocket frame: no fragmenting of snapshots.
  ws_.auto_fragment(false);
  ws_.read_message_max(0);
  ws_.async_accept(request, std::bind_front(&WebSocketSession::on_accept, self<WebSocketSession>()));
}

void WebSocketSession::on_accept(boost::system::error_code ec) {
  if (ec) {
    spdlog::info("WebSocket handshake with {} failed: {}", peer(), ec.message());
    close();
    return;
  }
  start();
}

void WebSocketSession::do_read() {
  reading_ = true;
  // One byte past the limit is enough to know a message is too large.
  const std::size_t room = frame_limit_ + 1 - std::min(message_.size(), frame_limit_);
  ws_.async_read_some(message_, std::min(room, kReadChunk),
                      std::bind_front(&WebSocketSession::on_read, self<WebSocketSession>()));
}

void WebSocketSession::on_read(boost::system::error_code ec, std::size_t) {
  reading_ = false;
  if (closed()) return;
  if (closing()) {
    // The closing handshake (linger) reads what is left.
    if (ec) close();
    return;
  }
  if (ec) {
    close();
    return;
  }
  if (ws_.got_text()) {
    fail(v1::MALFORMED_FRAME, "a text message: this protocol sends one protobuf ClientMessage per binary message");
    return;
  }
  if (message_.size() > frame_limit_) {
    fail(v1::FRAME_TOO_LARGE, "message of more than " + std::to_string(frame_limit_) + " bytes is over the limit" +
                                  (control() ? " (--max-frame-bytes)" : " (before Hello and for viewers)"));
    return;
  }
  if (!ws_.is_message_done()) {
    do_read();
    return;
  }
  const auto bytes = message_.cdata();
  on_frame(std::string_view(static_cast<const char*>(bytes.data()), bytes.size()));
  message_.consume(message_.size());
  if (message_.capacity() > kKeepBuffer) message_.shrink_to_fit();
  if (!closing() && !closed()) do_read();
}

void WebSocketSession::write(const std::string* table, const std::string& frame) {
  second_ = table != nullptr ? &frame : nullptr;
  ws_.async_write(payload(table != nullptr ? *table : frame),
                  std::bind_front(&WebSocketSession::on_message_written, self<WebSocketSession>()));
}

void WebSocketSession::on_message_written(boost::system::error_code ec, std::size_t n) {
  if (!ec && second_ != nullptr && !closed()) {
    const std::string* frame = std::exchange(second_, nullptr);
    ws_.async_write(payload(*frame), std::bind_front(&WebSocketSession::on_message_written, self<WebSocketSession>()));
    return;
  }
  second_ = nullptr;
  on_write(ec, n);
}

void WebSocketSession::linger() {
  // The Error or Goodbye is written: the closing handshake, which reads
  // (and drops) whatever the peer still sends until its close frame.
  const bool goodbye = closing_code() == v1::SHUTTING_DOWN;
  const websocket::close_reason reason(goodbye ? websocket::close_code::going_away : websocket::close_code::policy_error,
                                       goodbye ? "goodbye" : v1::ErrorCode_Name(closing_code()));
  ws_.async_close(reason, [self = self<WebSocketSession>()](boost::system::error_code) { self->close(); });
}

void WebSocketSession::close_transport() {
  boost::system::error_code ec;
  ws_.next_layer().shutdown(tcp::socket::shutdown_both, ec);
  ws_.next_layer().close(ec);
}

}  // namespace carom::server
