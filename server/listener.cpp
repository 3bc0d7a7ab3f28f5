// Listener: accept, then either a Session or a refusal at the door. Reads:
// the hub's client count and shutdown flag. Writes: nothing shared; each
// accepted socket gets its own strand, so its Session (or refusal) never
// needs a lock of its own.

#include "listener.hpp"

#include <array>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <functional>
#include <spdlog/spdlog.h>
#include <string>

#include "hub.hpp"
#include "session.hpp"

namespace carom::server {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

// What stays allocated until the peer has read the refusal: the socket, a
// timer and a 256-byte sink; the frame is shared by every refusal.
struct Refusal : std::enable_shared_from_this<Refusal> {
  tcp::socket socket;
  asio::steady_timer timer;
  std::shared_ptr<const std::string> frame;
  std::array<char, 256> sink{};
  explicit Refusal(tcp::socket s) : socket(std::move(s)), timer(socket.get_executor()) {}
  void close() {
    boost::system::error_code ec;
    timer.cancel();
    socket.close(ec);
  }
  // Read until the peer closes (so it gets the frame, not a reset).
  void drain() {
    socket.async_read_some(asio::buffer(sink), [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
      if (ec) {
        self->close();
      } else {
        self->drain();
      }
    });
  }
};

// When the server is full or shutting down, answers the new connection with
// the Error (SERVER_FULL or SHUTTING_DOWN) and closes it once the peer has
// read it (2 s at most), and returns true. Else false: make a Session, whose
// start() still refuses if the last slot went meanwhile.
bool refuse_if_full(tcp::socket& socket, Hub& hub) {
  const bool closing = hub.shutting_down();
  if (!closing && hub.clients() < hub.options().max_clients) return false;
  static const auto closing_frame = error_frame(v1::SHUTTING_DOWN, "the server is shutting down");
  const std::string peer = peer_name(socket);
  const auto max = hub.options().max_clients;
  if (closing) {
    spdlog::warn("refused {}: the server is shutting down", peer);
  } else {
    spdlog::warn("refused {}: server full ({} clients, --max-clients)", peer, max);
  }
  auto r = std::make_shared<Refusal>(std::move(socket));
  r->frame = closing ? closing_frame
                     : error_frame(v1::SERVER_FULL,
                                   "server full: " + std::to_string(max) + " clients connected (--max-clients)");
  asio::dispatch(r->socket.get_executor(), [r] {
    r->timer.expires_after(std::chrono::seconds(2));
    r->timer.async_wait([r](boost::system::error_code wait_ec) {
      if (!wait_ec) r->close();
    });
    asio::async_write(r->socket, asio::buffer(*r->frame), [r](boost::system::error_code write_ec, std::size_t) {
      if (write_ec) {
        r->close();
        return;
      }
      boost::system::error_code shut_ec;
      r->socket.shutdown(tcp::socket::shutdown_send, shut_ec);
      r->drain();
    });
  });
  return true;
}

}  // namespace

Listener::Listener(asio::io_context& io, Hub& hub) : Listener(io, hub, nullptr) {}

Listener::Listener(asio::io_context& io, Hub& hub, Handler handler)
    : io_(io), hub_(hub), handler_(std::move(handler)), acceptor_(asio::make_strand(io)),
      backoff_(acceptor_.get_executor()) {}

boost::system::error_code Listener::listen(const tcp::endpoint& endpoint) {
  boost::system::error_code ec;
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  return ec;
}

std::uint16_t Listener::port() const { return acceptor_.local_endpoint().port(); }

void Listener::run() { do_accept(); }

void Listener::close() {
  asio::post(acceptor_.get_executor(), [self = shared_from_this()] {
    boost::system::error_code ignored;
    self->acceptor_.close(ignored);
    self->backoff_.cancel();
  });
}

void Listener::do_accept() {
  // Each connection gets its own strand: its Session's handlers never run
  // at the same time, on however many network threads.
  acceptor_.async_accept(asio::make_strand(io_), std::bind_front(&Listener::on_accept, shared_from_this()));
}

void Listener::on_accept(boost::system::error_code ec, tcp::socket socket) {
  if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
  if (ec) {
    // Out of descriptors and the like: log, back off a little, carry on
    // (Beast's example stops accepting; a server meant to stay up cannot).
    spdlog::warn("accept failed: {}", ec.message());
    backoff_.expires_after(std::chrono::milliseconds(50));
    backoff_.async_wait(std::bind_front(&Listener::on_backoff, shared_from_this()));
    return;
  }
  if (handler_) {
    handler_(std::move(socket));
  } else if (!refuse_if_full(socket, hub_)) {
    std::make_shared<TcpSession>(std::move(socket), hub_)->start();
  }
  do_accept();
}

void Listener::on_backoff(boost::system::error_code ec) {
  if (!ec) do_accept();
}

}  // namespace carom::server
