// HttpSession: the HTTP port. Reads: one request at a time (headers at most
// 8 KiB, a body at most 1 KiB: nothing here takes one), each within 15 s.
// Writes: a file from the web root, a short text error, or nothing when the
// request is a WebSocket upgrade of /ws, whose connection then becomes a
// WebSocketSession (and a client of the hub, counted by --max-clients like
// a TCP one). Runs on the socket's strand only.

#include "http_session.hpp"

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/file_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/version.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <cctype>
#include <chrono>
#include <spdlog/spdlog.h>

#include "hub.hpp"
#include "session.hpp"
#include "websocket_session.hpp"

namespace carom::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;
using Request = http::request<http::string_body>;

namespace {

constexpr auto kRequestTimeout = std::chrono::seconds(15);
constexpr std::uint32_t kHeaderLimit = 8 << 10;
constexpr std::uint64_t kBodyLimit = 1 << 10;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The name in a Host header, without the port ("[::1]:8080" -> "::1").
std::string host_name(std::string_view host) {
  if (!host.empty() && host.front() == '[') {
    const auto end = host.find(']');
    return std::string(host.substr(1, end == std::string_view::npos ? std::string_view::npos : end - 1));
  }
  return std::string(host.substr(0, host.find(':')));
}

bool names_loopback(std::string_view host) {
  const std::string name = lower(host_name(host));
  if (name == "localhost") return true;
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(name, ec);
  return !ec && address.is_loopback();
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool websocket_origin_allowed(std::string_view origin, std::string_view host, const std::vector<std::string>& allowed,
                              bool loopback_bind) {
  if (loopback_bind && !names_loopback(host)) return false;
  if (origin.empty()) return true;
  const std::string o = lower(origin);
  const std::string h = lower(host);
  if (!h.empty() && (o == "http://" + h || o == "https://" + h)) return true;
  return std::any_of(allowed.begin(), allowed.end(), [&](const std::string& a) { return a == "*" || lower(a) == o; });
}

std::optional<std::filesystem::path> web_file(const std::filesystem::path& root, std::string_view target) {
  target = target.substr(0, target.find_first_of("?#"));
  if (target.empty() || target.front() != '/') return std::nullopt;
  std::string path;
  for (std::size_t i = 0; i < target.size(); ++i) {
    if (target[i] != '%') {
      path += target[i];
      continue;
    }
    const int high = i + 2 < target.size() ? hex_digit(target[i + 1]) : -1;
    const int low = high >= 0 ? hex_digit(target[i + 2]) : -1;
    if (low < 0) return std::nullopt;
    path += static_cast<char>(high * 16 + low);
    i += 2;
  }
  if (path.find('\0') != std::string::npos || path.find('\\') != std::string::npos) return std::nullopt;
  std::filesystem::path relative;
  std::size_t start = 1;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    const std::string_view segment = std::string_view(path).substr(start, end - start);
    if (segment == "." || segment == "..") return std::nullopt;
    if (!segment.empty()) relative /= std::string(segment);
    start = end + 1;
  }
  if (path.back() == '/') relative /= "index.html";
  // A symbolic link inside the root may point out of it: compare the real paths.
  std::error_code ec;
  const auto real_root = std::filesystem::canonical(root, ec);
  if (ec) return std::nullopt;
  const auto real = std::filesystem::weakly_canonical(real_root / relative, ec);
  if (ec) return std::nullopt;
  const auto [root_end, real_it] = std::mismatch(real_root.begin(), real_root.end(), real.begin(), real.end());
  if (root_end != real_root.end() || !std::filesystem::is_regular_file(real, ec)) return std::nullopt;
  return real;
}

std::string_view content_type(const std::filesystem::path& file) {
  const std::string ext = lower(file.extension().string());
  if (ext == ".html" || ext == ".htm") return "text/html; charset=utf-8";
  if (ext == ".js" || ext == ".mjs") return "text/javascript; charset=utf-8";
  if (ext == ".css") return "text/css; charset=utf-8";
  if (ext == ".json" || ext == ".map") return "application/json";
  if (ext == ".svg") return "image/svg+xml";
  if (ext == ".png") return "image/png";
  if (ext == ".ico") return "image/x-icon";
  if (ext == ".wasm") return "application/wasm";
  if (ext == ".txt") return "text/plain; charset=utf-8";
  if (ext == ".proto") return "text/plain; charset=utf-8";
  return "application/octet-stream";
}

HttpSession::HttpSession(tcp::socket socket, Hub& hub) : stream_(std::move(socket)), hub_(hub) {}

void HttpSession::run() { do_read(); }

void HttpSession::do_read() {
  parser_.emplace();
  parser_->header_limit(kHeaderLimit);
  parser_->body_limit(kBodyLimit);
  stream_.expires_after(kRequestTimeout);
  http::async_read(stream_, buffer_, *parser_, std::bind_front(&HttpSession::on_read, shared_from_this()));
}

void HttpSession::on_read(boost::system::error_code ec, std::size_t) {
  if (ec) {
    // The peer closed, timed out, or sent what is not HTTP: nothing to answer.
    boost::system::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
    return;
  }
  handle(parser_->release());
}

void HttpSession::handle(Request request) {
  const ServerOptions& opt = hub_.options();
  const std::string_view target(request.target().data(), request.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  if (path == "/ws") {
    if (!beast::websocket::is_upgrade(request)) {
      error(request, http::status::upgrade_required, "/ws is carom's protocol over a WebSocket: connect with one\n");
      return;
    }
    const std::string_view origin(request[http::field::origin].data(), request[http::field::origin].size());
    const std::string_view host(request[http::field::host].data(), request[http::field::host].size());
    boost::system::error_code ec;
    const auto bind = asio::ip::make_address(opt.bind, ec);
    if (!websocket_origin_allowed(origin, host, opt.allowed_origins, !ec && bind.is_loopback())) {
      spdlog::warn("refused a WebSocket from {} (Origin '{}', Host '{}'): not this server's origin", peer_name(stream_.socket()),
                   origin, host);
      error(request, http::status::forbidden,
            "Origin '" + std::string(origin) + "' (Host '" + std::string(host) +
                "') may not open this server's WebSocket: serve the page from this server, or start it with "
                "--allow-origin " +
                std::string(origin.empty() ? "ORIGIN" : origin) + "\n");
      return;
    }
    // The connection leaves HTTP: the WebSocket session owns it from here.
    stream_.expires_never();
    std::make_shared<WebSocketSession>(stream_.release_socket(), hub_)->accept(std::move(request));
    return;
  }
  if (beast::websocket::is_upgrade(request)) {
    error(request, http::status::not_found, "the WebSocket is at /ws\n");
    return;
  }
  if (request.method() != http::verb::get && request.method() != http::verb::head) {
    error(request, http::status::method_not_allowed, "only GET and HEAD\n");
    return;
  }
  const auto file = opt.web_root.empty() ? std::nullopt : web_file(opt.web_root, target);
  beast::error_code ec;
  http::file_body::value_type body;
  if (file) body.open(file->c_str(), beast::file_mode::scan, ec);
  if (!file || ec) {
    error(request, http::status::not_found,
          opt.web_root.empty() ? "not found: this server has no web root (--web-root)\n" : "not found\n");
    return;
  }
  const auto size = body.size();
  const auto set_headers = [&](auto& response) {
    response.set(http::field::server, "carom-server");
    const std::string_view type = content_type(*file);
    response.set(http::field::content_type, beast::string_view(type.data(), type.size()));
    response.set(http::field::cache_control, "no-cache");
    response.set("X-Content-Type-Options", "nosniff");
    response.content_length(size);
    response.keep_alive(request.keep_alive());
  };
  if (request.method() == http::verb::head) {
    http::response<http::empty_body> response{http::status::ok, request.version()};
    set_headers(response);
    send(std::move(response));
    return;
  }
  http::response<http::file_body> response{std::piecewise_construct, std::make_tuple(std::move(body)),
                                           std::make_tuple(http::status::ok, request.version())};
  set_headers(response);
  send(std::move(response));
}

void HttpSession::error(const Request& request, http::status status, std::string text) {
  http::response<http::string_body> response{status, request.version()};
  response.set(http::field::server, "carom-server");
  response.set(http::field::content_type, "text/plain; charset=utf-8");
  response.set("X-Content-Type-Options", "nosniff");
  response.keep_alive(request.keep_alive());
  if (request.method() != http::verb::head) response.body() = std::move(text);
  response.prepare_payload();
  send(std::move(response));
}

template <class Body>
void HttpSession::send(http::response<Body> response) {
  auto held = std::make_shared<http::response<Body>>(std::move(response));
  response_ = held;
  stream_.expires_after(kRequestTimeout);
  http::async_write(stream_, *held,
                    std::bind_front(&HttpSession::on_write, shared_from_this(), held->need_eof()));
}

void HttpSession::on_write(bool close, boost::system::error_code ec, std::size_t) {
  response_.reset();
  if (ec || close) {
    boost::system::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.close();
    return;
  }
  do_read();
}

}  // namespace carom::server
