#pragma once
/// \file WebSocketSession: a Session whose transport is a WebSocket (the
/// upgrade of an HTTP request to /ws, see http_session.hpp). One protobuf
/// message per binary WebSocket message, no length prefix; everything else
/// (Hello, roles, token, limits, the stream slot, errors) is Session's.

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <string>

#include "session.hpp"

namespace carom::server {

class WebSocketSession final : public Session {
 public:
  /// Takes the connection whose HTTP request asked for the upgrade.
  WebSocketSession(boost::asio::ip::tcp::socket socket, Hub& hub);

  /// Answers the upgrade `request` asked for, then starts the session (or
  /// closes the connection if the handshake fails). The socket's strand.
  void accept(boost::beast::http::request<boost::beast::http::string_body> request);

 private:
  void on_accept(boost::system::error_code ec);
  // The read path: parts of a message, then the whole one to on_frame.
  void do_read() override;
  void on_read(boost::system::error_code ec, std::size_t n);
  void write(const std::string* table, const std::string& frame) override;
  void on_message_written(boost::system::error_code ec, std::size_t n);
  void set_frame_limit(std::size_t bytes) override { frame_limit_ = bytes; }
  void linger() override;
  void close_transport() override;

  boost::beast::websocket::stream<boost::asio::ip::tcp::socket> ws_;
  boost::beast::flat_buffer message_;  // the message being read
  std::size_t frame_limit_;
  const std::string* second_ = nullptr;  // the snapshot to write after its table
};

}  // namespace carom::server
