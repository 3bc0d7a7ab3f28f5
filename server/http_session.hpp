#pragma once
/// \file HttpSession: one connection to the HTTP port (--http-port). Serves
/// the web viewer's files from --web-root at `/` (GET and HEAD; anything
/// outside the root, or missing, is 404), and hands a WebSocket upgrade of
/// `/ws` whose Origin passes the check to a WebSocketSession. The shape of
/// Boost.Beast's advanced server example (http_session detecting the
/// upgrade), one request at a time.

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace carom::server {

class Hub;

/// Whether a WebSocket upgrade from a page at `origin` (the Origin header;
/// "" when the client sent none) may connect, the request naming `host`
/// (the Host header). Allowed: no Origin (not a browser), the server's own
/// origin (http:// or https:// + host), or one of `allowed` ("*" = any).
/// When `loopback_bind`, the host must also name loopback (localhost,
/// 127.0.0.0/8, [::1]): a foreign name resolving to 127.0.0.1 (DNS
/// rebinding) is refused. Any thread.
bool websocket_origin_allowed(std::string_view origin, std::string_view host, const std::vector<std::string>& allowed,
                              bool loopback_bind);

/// The regular file under `root` that the request path `target` names, or
/// nullopt when it names none: not absolute, a "." or ".." segment, a NUL or
/// a backslash, a bad %-escape, a directory, a missing file, or (after
/// symbolic links) a path outside `root`. "/" and paths ending in "/" name
/// index.html there. Any thread.
std::optional<std::filesystem::path> web_file(const std::filesystem::path& root, std::string_view target);

/// The Content-Type for a file's extension. Any thread.
std::string_view content_type(const std::filesystem::path& file);

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(boost::asio::ip::tcp::socket socket, Hub& hub);
  /// Starts reading requests. The socket's strand.
  void run();

 private:
  void do_read();
  void on_read(boost::system::error_code ec, std::size_t n);
  void handle(boost::beast::http::request<boost::beast::http::string_body> request);
  template <class Body>
  void send(boost::beast::http::response<Body> response);
  void on_write(bool close, boost::system::error_code ec, std::size_t n);
  void error(const boost::beast::http::request<boost::beast::http::string_body>& request,
             boost::beast::http::status status, std::string text);

  boost::beast::tcp_stream stream_;
  Hub& hub_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  std::shared_ptr<void> response_;  // the response being written (kept alive)
};

}  // namespace carom::server
