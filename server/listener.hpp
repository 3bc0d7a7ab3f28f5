#pragma once
/// \file Listener: accepts connections and hands each socket, on a strand of
/// its own, to a Session (the listener of Boost.Beast's chat-multi example).
/// A connection that comes when the server is full or shutting down is
/// answered at the door instead, without a Session.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>
#include <cstdint>
#include <functional>
#include <memory>

namespace carom::server {

class Hub;

class Listener : public std::enable_shared_from_this<Listener> {
 public:
  /// What becomes of an accepted socket (the HTTP port's sessions). Called
  /// on the acceptor's strand; the socket has a strand of its own.
  using Handler = std::function<void(boost::asio::ip::tcp::socket)>;

  /// The acceptor runs on a strand of `io`; so does each accepted socket,
  /// which becomes a TcpSession (or is refused at the door).
  Listener(boost::asio::io_context& io, Hub& hub);
  /// The same, each accepted socket going to `handler` instead.
  Listener(boost::asio::io_context& io, Hub& hub, Handler handler);

  /// Opens, binds and listens on `endpoint`. Before run(); caller's thread.
  /// Apart from the constructor (Beast's opens there and logs a failure), so
  /// that Server::start can refuse to start and say why.
  boost::system::error_code listen(const boost::asio::ip::tcp::endpoint& endpoint);
  /// The port actually bound (useful with port 0). After listen().
  std::uint16_t port() const;
  /// Starts accepting; the handlers run on the network threads. Once.
  void run();
  /// Stops accepting: closes the acceptor on its strand. Any thread.
  void close();

 private:
  void do_accept();
  void on_accept(boost::system::error_code ec, boost::asio::ip::tcp::socket socket);
  void on_backoff(boost::system::error_code ec);

  boost::asio::io_context& io_;
  Hub& hub_;
  Handler handler_;  // empty: carom's TCP protocol
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer backoff_;  // after a failed accept (out of descriptors)
};

}  // namespace carom::server
