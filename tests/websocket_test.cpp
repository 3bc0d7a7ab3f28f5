// carom-server's HTTP port (--http-port): the web viewer's files and the
// protocol over a WebSocket at /ws, against the real Server over loopback,
// driven by scripted Boost.Beast clients (the browser's side) and, next to
// them, the TCP client library.

#include <dirent.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <filesystem>
#include <map>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "support/commands.hpp"
#include "support/process.hpp"
#include <spdlog/spdlog.h>

#include "carom/client/connection.hpp"
#include "carom/proto/compact.hpp"
#include "carom/proto/framing.hpp"
#include "carom/v1/protocol.pb.h"
#include "http_session.hpp"
#include "server.hpp"

namespace carom {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

using test::open_fds;
// A scripted browser tab: a WebSocket to /ws, one protobuf message per
// binary message.
class WsClient {
 public:
  // The upgrade; `origin` "" sends none, `host` "" sends 127.0.0.1:PORT.
  ::testing::AssertionResult open(std::uint16_t port, const std::string& origin = {}, const std::string& host = {}) {
    boost::system::error_code ec;
    ws_.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
    if (ec) return ::testing::AssertionFailure() << "connect: " << ec.message();
    timeval tv{5, 0};
    setsockopt(ws_.next_layer().native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ws_.set_option(websocket::stream_base::decorator([origin](websocket::request_type& request) {
      if (!origin.empty()) request.set(http::field::origin, origin);
    }));
    ws_.handshake(response_, host.empty() ? "127.0.0.1:" + std::to_string(port) : host, "/ws", ec);
    if (ec) return ::testing::AssertionFailure() << "handshake: " << ec.message() << " (HTTP " << response_.result_int() << ")";
    ws_.binary(true);
    return ::testing::AssertionSuccess();
  }
  ::testing::AssertionResult hello(v1::Role role, const std::string& token = {}, const v1::SnapshotWishes* wishes = nullptr) {
    v1::ClientMessage m;
    v1::Hello& h = *m.mutable_hello();
    h.set_protocol_version(proto::kProtocolVersion);
    h.set_role(role);
    h.set_token(token);
    h.set_client_name("websocket_test");
    if (wishes != nullptr) *h.mutable_wishes() = *wishes;
    if (!send(m)) return ::testing::AssertionFailure() << "send Hello failed";
    v1::ServerMessage reply;
    if (!receive(&reply)) return ::testing::AssertionFailure() << "no reply to Hello";
    if (!reply.has_welcome()) return ::testing::AssertionFailure() << "not a Welcome: " << reply.ShortDebugString();
    welcome_ = reply.welcome();
    return ::testing::AssertionSuccess();
  }
  bool send(const v1::ClientMessage& m) { return send_raw(m.SerializeAsString(), true); }
  bool send_raw(const std::string& bytes, bool binary) {
    boost::system::error_code ec;
    ws_.binary(binary);
    ws_.write(asio::buffer(bytes), ec);
    ws_.binary(true);
    return !ec;
  }
  // The next message; false on a close, an error or 5 s of silence.
  bool receive(v1::ServerMessage* out) {
    beast::flat_buffer buffer;
    boost::system::error_code ec;
    ws_.read(buffer, ec);
    if (ec) {
      error_ = ec;
      return false;
    }
    last_binary_ = ws_.got_binary();
    const auto bytes = buffer.cdata();
    return out->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  }
  bool next_snapshot(v1::Snapshot* out) {
    v1::ServerMessage m;
    for (int k = 0; k < 1000; ++k) {
      if (!receive(&m)) return false;
      if (m.has_snapshot()) {
        *out = std::move(*m.mutable_snapshot());
        return true;
      }
    }
    return false;
  }
  v1::CommandResult call(v1::Command command) {
    command.set_request_id(++request_);
    v1::ClientMessage m;
    *m.mutable_command() = std::move(command);
    EXPECT_TRUE(send(m));
    v1::ServerMessage reply;
    while (receive(&reply)) {
      if (reply.has_result() && reply.result().request_id() == request_) return reply.result();
    }
    ADD_FAILURE() << "no result: " << error_.message();
    return {};
  }
  void close() {
    boost::system::error_code ec;
    ws_.close(websocket::close_code::normal, ec);
  }
  int native_handle() { return ws_.next_layer().native_handle(); }
  const http::response<http::string_body>& response() const { return response_; }
  const boost::system::error_code& error() const { return error_; }
  const v1::Welcome& welcome() const { return welcome_; }
  bool last_binary() const { return last_binary_; }

 private:
  asio::io_context io_;
  websocket::stream<tcp::socket> ws_{io_};
  websocket::response_type response_;
  boost::system::error_code error_;
  v1::Welcome welcome_;
  std::uint64_t request_ = 0;
  bool last_binary_ = false;
};

// One HTTP/1.1 request on a fresh connection.
http::response<http::string_body> http_get(std::uint16_t port, const std::string& target,
                                           http::verb method = http::verb::get) {
  asio::io_context io;
  tcp::socket socket(io);
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  http::request<http::empty_body> request{method, target, 11};
  request.set(http::field::host, "127.0.0.1:" + std::to_string(port));
  request.keep_alive(false);
  http::write(socket, request);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  if (method == http::verb::head) parser.skip(true);
  boost::system::error_code ec;
  http::read(socket, buffer, parser, ec);
  if (ec) ADD_FAILURE() << target << ": " << ec.message();
  return parser.release();
}

// The HTTP status of a WebSocket upgrade of /ws (101 when accepted).
unsigned upgrade_status(std::uint16_t port, const std::string& origin, const std::string& host,
                        const std::string& target = "/ws") {
  asio::io_context io;
  tcp::socket socket(io);
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  http::request<http::empty_body> request{http::verb::get, target, 11};
  request.set(http::field::host, host);
  request.set(http::field::origin, origin);
  request.set(http::field::connection, "Upgrade");
  request.set(http::field::upgrade, "websocket");
  request.set(http::field::sec_websocket_version, "13");
  request.set(http::field::sec_websocket_key, "dGhlIHNhbXBsZSBub25jZQ==");
  http::write(socket, request);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.skip(true);  // a 101 has no body
  boost::system::error_code ec;
  http::read_header(socket, buffer, parser, ec);
  if (ec) ADD_FAILURE() << "upgrade: " << ec.message();
  return parser.get().result_int();
}

using test::spawn_body;

v1::Command get_stats() {
  v1::Command c;
  c.mutable_get_stats();
  return c;
}

class WebSocketTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { spdlog::set_level(spdlog::level::err); }
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("carom_ws_test_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "web" / "css");
    std::ofstream(dir_ / "web" / "index.html") << "<!doctype html><title>carom test page</title>\n";
    std::ofstream(dir_ / "web" / "app.js") << "console.log('carom');\n";
    std::ofstream(dir_ / "web" / "css" / "style.css") << "body { margin: 0 }\n";
    std::ofstream(dir_ / "secret.txt") << "outside the web root\n";
    std::filesystem::create_symlink(dir_ / "secret.txt", dir_ / "web" / "link.txt");
  }
  void TearDown() override {
    if (server_) server_->stop("test over");
    std::filesystem::remove_all(dir_);
  }
  void start(server::ServerOptions o = {}) {
    o.port = 0;
    o.http_port = 0;
    o.threads = 1;
    if (o.web_root.empty()) o.web_root = (dir_ / "web").string();
    server_ = std::make_unique<server::Server>(o);
    const Status s = server_->start();
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_NE(server_->http_port(), 0);
  }
  std::uint16_t http_port() const { return server_->http_port(); }
  ::testing::AssertionResult tcp_connect(client::Connection& c, v1::Role role, const std::string& token = {}) {
    v1::Hello hello;
    hello.set_role(role);
    hello.set_token(token);
    hello.set_client_name("websocket_test");
    if (!c.connect({"127.0.0.1", server_->port()}, hello)) return ::testing::AssertionFailure() << c.error();
    return ::testing::AssertionSuccess();
  }
  // The clients the server counts, through a TCP controller.
  std::uint32_t clients(client::Connection& ctl) {
    v1::CommandResult r;
    EXPECT_TRUE(ctl.call(get_stats(), &r)) << ctl.error();
    return r.stats().clients();
  }

  std::filesystem::path dir_;
  std::unique_ptr<server::Server> server_;
};

TEST_F(WebSocketTest, ServesThePageAndItsAssetsAndNothingOutsideTheRoot) {
  start();
  auto r = http_get(http_port(), "/");
  EXPECT_EQ(r.result(), http::status::ok);
  EXPECT_EQ(r.body(), "<!doctype html><title>carom test page</title>\n");
  EXPECT_EQ(r[http::field::content_type], "text/html; charset=utf-8");
  r = http_get(http_port(), "/app.js?v=1");
  EXPECT_EQ(r.result(), http::status::ok);
  EXPECT_EQ(r[http::field::content_type], "text/javascript; charset=utf-8");
  r = http_get(http_port(), "/css/style.css");
  EXPECT_EQ(r.result(), http::status::ok);
  EXPECT_EQ(r[http::field::content_type], "text/css; charset=utf-8");
  r = http_get(http_port(), "/index.html", http::verb::head);
  EXPECT_EQ(r.result(), http::status::ok);
  EXPECT_EQ(r[http::field::content_length], "46");
  for (const char* target : {"/missing.js", "/../secret.txt", "/%2e%2e/secret.txt", "/..%2fsecret.txt", "/css/../../secret.txt",
                             "/link.txt", "/%zz", "//etc/passwd", "/css"}) {
    r = http_get(http_port(), target);
    EXPECT_EQ(r.result(), http::status::not_found) << target;
    EXPECT_EQ(r.body().find("outside"), std::string::npos) << target;
  }
  EXPECT_EQ(http_get(http_port(), "/", http::verb::post).result(), http::status::method_not_allowed);
  EXPECT_EQ(http_get(http_port(), "/ws").result(), http::status::upgrade_required);
  // The rule itself, without a server.
  const std::filesystem::path root = dir_ / "web";
  EXPECT_EQ(server::web_file(root, "/"), std::filesystem::canonical(root / "index.html"));
  EXPECT_EQ(server::web_file(root, "/css/"), std::nullopt) << "a directory without index.html";
  EXPECT_EQ(server::web_file(root, "relative.js"), std::nullopt);
  EXPECT_EQ(server::web_file(root, "/css\\..\\..\\secret.txt"), std::nullopt);
  EXPECT_EQ(server::web_file(root, "/app.js%00.html"), std::nullopt);
}

TEST_F(WebSocketTest, AViewerGetsWelcomeAndSnapshotsAndAControllerWithTheTokenSpawnsWhatTcpViewersSee) {
  server::ServerOptions o;
  o.token = "secret";
  start(o);
  client::Connection tcp_viewer;
  ASSERT_TRUE(tcp_connect(tcp_viewer, v1::ROLE_VIEWER));
  WsClient viewer, ctl;
  ASSERT_TRUE(viewer.open(http_port()));
  ASSERT_TRUE(viewer.hello(v1::ROLE_VIEWER));
  EXPECT_FALSE(viewer.welcome().control());
  EXPECT_EQ(viewer.welcome().protocol_version(), proto::kProtocolVersion);
  v1::Snapshot s;
  ASSERT_TRUE(viewer.next_snapshot(&s));
  EXPECT_TRUE(viewer.last_binary());
  const std::uint64_t first = s.tick();
  ASSERT_TRUE(viewer.next_snapshot(&s));
  EXPECT_GT(s.tick(), first);

  ASSERT_TRUE(ctl.open(http_port()));
  ASSERT_TRUE(ctl.hello(v1::ROLE_CONTROLLER, "secret"));
  EXPECT_TRUE(ctl.welcome().control());
  const v1::CommandResult r = ctl.call(spawn_body(30, 40, 1.5));
  ASSERT_EQ(r.code(), v1::OK) << r.message();
  ASSERT_EQ(r.spawned().ids_size(), 1);
  const std::uint32_t id = r.spawned().ids(0);
  // The TCP viewer and the WebSocket viewer both see it at the reported tick.
  for (int k = 0; k < 600; ++k) {
    v1::ServerMessage m;
    ASSERT_TRUE(tcp_viewer.receive(&m, 5.0)) << tcp_viewer.error();
    if (m.has_snapshot() && m.snapshot().tick() >= r.tick()) {
      ASSERT_EQ(m.snapshot().id_size(), 1);
      EXPECT_EQ(m.snapshot().id(0), id);
      EXPECT_FLOAT_EQ(m.snapshot().x(0), 30.0f);
      break;
    }
  }
  do {
    ASSERT_TRUE(viewer.next_snapshot(&s));
  } while (s.tick() < r.tick());
  ASSERT_EQ(s.id_size(), 1);
  EXPECT_EQ(s.id(0), id);
  // A controller's message may pass the viewers' 64 KiB (--max-frame-bytes,
  // 1 MiB by default): it arrives in several reads.
  v1::Command big;
  for (int i = 0; i < 4000; ++i) {
    v1::Body& b = *big.mutable_spawn()->add_bodies();
    b.mutable_position()->set_x(2.0 + 0.6 * (i % 150));
    b.mutable_position()->set_y(50.0 + 0.6 * (i / 150));
    b.set_radius(0.25);
  }
  ASSERT_GT(big.ByteSizeLong(), std::size_t{64} << 10);
  const v1::CommandResult many = ctl.call(big);
  ASSERT_EQ(many.code(), v1::OK) << many.message();
  EXPECT_EQ(many.spawned().ids_size(), 4000);
  // A viewer's command is refused, and it stays connected.
  const v1::CommandResult refused = viewer.call(spawn_body(1, 1, 1));
  EXPECT_EQ(refused.code(), v1::PERMISSION_DENIED);
  ASSERT_TRUE(viewer.next_snapshot(&s));
}

TEST_F(WebSocketTest, BodyTablesAndTheCompactStreamComeAsSeparateMessages) {
  start();
  WsClient ctl;
  ASSERT_TRUE(ctl.open(http_port()));
  ASSERT_TRUE(ctl.hello(v1::ROLE_CONTROLLER));  // loopback: no token needed
  for (int k = 0; k < 5; ++k) ASSERT_EQ(ctl.call(spawn_body(10 + 5 * k, 10, 1)).code(), v1::OK);
  for (const bool compact : {false, true}) {
    v1::SnapshotWishes wishes;
    wishes.set_body_tables(true);
    wishes.set_compact(compact);
    WsClient viewer;
    ASSERT_TRUE(viewer.open(http_port()));
    ASSERT_TRUE(viewer.hello(v1::ROLE_VIEWER, {}, &wishes));
    v1::ServerMessage m;
    ASSERT_TRUE(viewer.receive(&m));
    ASSERT_TRUE(m.has_body_table()) << "the table first, as its own message: " << m.ShortDebugString();
    EXPECT_EQ(m.body_table().id_size(), 5);
    const std::uint64_t epoch = m.body_table().epoch();
    const std::vector<std::uint32_t> ids(m.body_table().id().begin(), m.body_table().id().end());
    std::uint64_t previous = 0;
    proto::Track track, next;
    for (int k = 0; k < 5; ++k) {
      v1::Snapshot s;
      ASSERT_TRUE(viewer.next_snapshot(&s));
      EXPECT_EQ(s.body_table(), epoch);
      EXPECT_EQ(s.id_size(), 0);
      if (compact) {
        EXPECT_TRUE(s.has_compact());
        EXPECT_FALSE(s.compact().positions().empty());
        if (k > 0) {
          EXPECT_TRUE(s.compact().has_baseline_tick());
          EXPECT_EQ(s.compact().baseline_tick(), previous);
        }
        // The same decoder as over TCP: a key frame, then deltas on it.
        ASSERT_EQ(proto::decode_track(proto::Channel::kPosition, k > 0 ? &track : nullptr, ids,
                                      s.compact().positions(), &next),
                  "");
        track = next;
        for (std::size_t i = 0; i < ids.size(); ++i) {
          const double q = s.compact().position_quantum();
          EXPECT_NEAR(static_cast<double>(track.x[i]) * q, 10.0 + 5.0 * static_cast<double>(i), q) << "body " << i;
          EXPECT_NEAR(static_cast<double>(track.y[i]) * q, 10.0, 0.5) << "body " << i;
        }
      } else {
        EXPECT_EQ(s.x_size(), 5);
      }
      previous = s.tick();
    }
  }
}

TEST_F(WebSocketTest, AStreamDecoderReadsTheWebSocketStreamAsTheTcpConnectionReadsItsOwn) {
  start();
  client::Connection ctl;
  ASSERT_TRUE(tcp_connect(ctl, v1::ROLE_CONTROLLER));
  v1::Command spawn;
  for (int i = 0; i < 40; ++i) {
    v1::Body& b = *spawn.mutable_spawn()->add_bodies();
    b.mutable_position()->set_x(5.0 + 2.2 * i);
    b.mutable_position()->set_y(20.0 + (i % 7));
    b.mutable_velocity()->set_x(3.0 - 0.15 * i);
    b.mutable_velocity()->set_y(1.0 + 0.05 * i);
    b.set_radius(0.5);
  }
  v1::CommandResult r;
  ASSERT_TRUE(ctl.call(spawn, &r)) << ctl.error();
  ASSERT_EQ(r.code(), v1::OK) << r.message();
  // Both ask for what Connection asks for by default: body tables, the
  // compact stream and compact events, with velocities.
  v1::Hello hello;
  hello.set_role(v1::ROLE_VIEWER);
  hello.mutable_wishes()->set_velocities(true);
  hello.mutable_wishes()->set_events(true);
  client::Connection tcp_viewer;
  ASSERT_TRUE(tcp_viewer.connect({"127.0.0.1", server_->port()}, hello)) << tcp_viewer.error();
  client::add_stream_wishes(&hello, true, true);
  ASSERT_TRUE(hello.wishes().compact());
  WsClient ws_viewer;
  ASSERT_TRUE(ws_viewer.open(http_port(), "http://127.0.0.1:" + std::to_string(http_port())));
  ASSERT_TRUE(ws_viewer.hello(v1::ROLE_VIEWER, {}, &hello.wishes()));
  client::StreamDecoder decoder;
  std::map<std::uint64_t, v1::Snapshot> over_tcp, over_ws;
  int kept = 0;
  while (over_ws.size() < 30) {
    v1::ServerMessage m;
    ASSERT_TRUE(ws_viewer.receive(&m)) << ws_viewer.error().message();
    std::string why;
    const client::StreamDecoder::Result result = decoder.take(&m, &why);
    ASSERT_NE(result, client::StreamDecoder::Result::kError) << why;
    if (result == client::StreamDecoder::Result::kKept) ++kept;
    if (m.has_snapshot() && result == client::StreamDecoder::Result::kMessage) {
      ASSERT_TRUE(m.snapshot().has_compact());
      over_ws.emplace(m.snapshot().tick(), m.snapshot());
    }
  }
  EXPECT_GE(kept, 1) << "the body table is kept, not returned";
  while (over_tcp.empty() || over_tcp.rbegin()->first < over_ws.rbegin()->first) {
    v1::ServerMessage m;
    ASSERT_TRUE(tcp_viewer.receive(&m, 5.0)) << tcp_viewer.error();
    if (m.has_snapshot()) over_tcp.emplace(m.snapshot().tick(), m.snapshot());
  }
  int compared = 0;
  for (const auto& [tick, ws] : over_ws) {
    const auto it = over_tcp.find(tick);
    if (it == over_tcp.end()) continue;
    const v1::Snapshot& tcp = it->second;
    ++compared;
    ASSERT_EQ(ws.id_size(), 40);
    EXPECT_TRUE(std::equal(ws.id().begin(), ws.id().end(), tcp.id().begin(), tcp.id().end())) << "tick " << tick;
    EXPECT_TRUE(std::equal(ws.radius().begin(), ws.radius().end(), tcp.radius().begin(), tcp.radius().end()));
    EXPECT_TRUE(std::equal(ws.x().begin(), ws.x().end(), tcp.x().begin(), tcp.x().end())) << "tick " << tick;
    EXPECT_TRUE(std::equal(ws.y().begin(), ws.y().end(), tcp.y().begin(), tcp.y().end())) << "tick " << tick;
    EXPECT_TRUE(std::equal(ws.vx().begin(), ws.vx().end(), tcp.vx().begin(), tcp.vx().end())) << "tick " << tick;
    EXPECT_EQ(ws.events_size(), tcp.events_size()) << "tick " << tick;
  }
  EXPECT_GE(compared, 20) << "the two viewers saw mostly the same ticks";
}

TEST_F(WebSocketTest, BadTokensGarbageAndTextMessagesGetAnErrorAndACloseAndOthersCarryOn) {
  server::ServerOptions o;
  o.token = "secret";
  start(o);
  client::Connection tcp_viewer;
  ASSERT_TRUE(tcp_connect(tcp_viewer, v1::ROLE_VIEWER));
  WsClient ws_viewer;
  ASSERT_TRUE(ws_viewer.open(http_port()));
  ASSERT_TRUE(ws_viewer.hello(v1::ROLE_VIEWER));

  const auto expect_error_then_close = [](WsClient& c, v1::ErrorCode code, const char* what) {
    v1::ServerMessage m;
    ASSERT_TRUE(c.receive(&m)) << what << ": " << c.error().message();
    ASSERT_TRUE(m.has_error()) << what << ": " << m.ShortDebugString();
    EXPECT_EQ(m.error().code(), code) << what << ": " << m.error().message();
    EXPECT_FALSE(c.receive(&m)) << what << ": still open";
    EXPECT_EQ(c.error(), websocket::error::closed) << what << ": " << c.error().message();
  };
  {
    WsClient c;
    ASSERT_TRUE(c.open(http_port()));
    v1::ClientMessage m;
    m.mutable_hello()->set_protocol_version(proto::kProtocolVersion);
    m.mutable_hello()->set_role(v1::ROLE_CONTROLLER);
    m.mutable_hello()->set_token("wrong");
    ASSERT_TRUE(c.send(m));
    expect_error_then_close(c, v1::UNAUTHENTICATED, "wrong token");
  }
  {
    WsClient c;
    ASSERT_TRUE(c.open(http_port()));
    ASSERT_TRUE(c.send_raw(std::string("\xff\xff\xff\xff\x0f garbage", 13), true));
    expect_error_then_close(c, v1::MALFORMED_FRAME, "garbage binary");
  }
  {
    WsClient c;
    ASSERT_TRUE(c.open(http_port()));
    ASSERT_TRUE(c.send_raw("{\"hello\": {}}", false));
    expect_error_then_close(c, v1::MALFORMED_FRAME, "text message");
  }
  {
    // After a Hello as a viewer, garbage still ends only that session.
    WsClient c;
    ASSERT_TRUE(c.open(http_port()));
    ASSERT_TRUE(c.hello(v1::ROLE_VIEWER));
    ASSERT_TRUE(c.send_raw("\x08", true));
    v1::ServerMessage m;
    bool error = false;
    while (!error && c.receive(&m)) error = m.has_error();
    ASSERT_TRUE(error);
    EXPECT_EQ(m.error().code(), v1::MALFORMED_FRAME);
  }
  {
    // Over the 64 KiB limit of a viewer (and of anyone before Hello).
    WsClient c;
    ASSERT_TRUE(c.open(http_port()));
    ASSERT_TRUE(c.send_raw(std::string(100000, '\0'), true));
    expect_error_then_close(c, v1::FRAME_TOO_LARGE, "oversized message");
  }
  // The others never noticed.
  v1::Snapshot s;
  ASSERT_TRUE(ws_viewer.next_snapshot(&s));
  const std::uint64_t tick = s.tick();
  ASSERT_TRUE(ws_viewer.next_snapshot(&s));
  EXPECT_GT(s.tick(), tick);
  v1::ServerMessage m;
  ASSERT_TRUE(tcp_viewer.receive(&m, 5.0)) << tcp_viewer.error();
  client::Connection ctl;
  ASSERT_TRUE(tcp_connect(ctl, v1::ROLE_CONTROLLER, "secret"));
  EXPECT_EQ(clients(ctl), 3u);
}

TEST_F(WebSocketTest, AForeignOriginOrHostIsRefusedAndTheServersOwnOrAnAllowedOneIsNot) {
  server::ServerOptions o;
  o.allowed_origins = {"http://localhost:5173"};
  start(o);
  const std::string own = "http://127.0.0.1:" + std::to_string(http_port());
  const std::string here = "127.0.0.1:" + std::to_string(http_port());
  EXPECT_EQ(upgrade_status(http_port(), "http://evil.example", here), 403u);
  EXPECT_EQ(upgrade_status(http_port(), "http://" + here, here), 101u);
  EXPECT_EQ(upgrade_status(http_port(), "http://" + here, here, "/"), 404u) << "the WebSocket is at /ws only";
  // DNS rebinding: a foreign name that resolves to this loopback server.
  const std::string rebound = "evil.example:" + std::to_string(http_port());
  EXPECT_EQ(upgrade_status(http_port(), "http://" + rebound, rebound), 403u);
  {
    WsClient c;
    EXPECT_FALSE(c.open(http_port(), "http://evil.example"));
  }
  for (const std::string& origin : {own, std::string("http://localhost:5173"), std::string()}) {
    WsClient c;
    ASSERT_TRUE(c.open(http_port(), origin)) << "Origin '" << origin << "'";
    EXPECT_TRUE(c.hello(v1::ROLE_VIEWER));
  }
  EXPECT_TRUE(server::websocket_origin_allowed("http://LOCALHOST:8080", "localhost:8080", {}, true));
  EXPECT_TRUE(server::websocket_origin_allowed("http://[::1]:8080", "[::1]:8080", {}, true));
  EXPECT_FALSE(server::websocket_origin_allowed("http://other:8080", "localhost:8080", {}, true));
  EXPECT_TRUE(server::websocket_origin_allowed("http://other:8080", "localhost:8080", {"*"}, true));
  EXPECT_TRUE(server::websocket_origin_allowed("http://carom.lan:8080", "carom.lan:8080", {}, false));
}

TEST_F(WebSocketTest, FiftyConnectionsOpeningAndClosingLeaveNothingBehind) {
  start();
  client::Connection ctl;
  ASSERT_TRUE(tcp_connect(ctl, v1::ROLE_CONTROLLER));
  {
    WsClient warm;
    ASSERT_TRUE(warm.open(http_port()));
    ASSERT_TRUE(warm.hello(v1::ROLE_VIEWER));
    warm.close();
  }
  const auto settle = [&](std::uint32_t want) {
    std::uint32_t n = clients(ctl);
    for (int i = 0; i < 100 && n != want; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      n = clients(ctl);
    }
    return n;
  };
  ASSERT_EQ(settle(1), 1u);
  const std::size_t fds_before = open_fds();
  for (int round = 0; round < 2; ++round) {
    std::vector<std::unique_ptr<WsClient>> tabs;
    for (int i = 0; i < 50; ++i) {
      tabs.push_back(std::make_unique<WsClient>());
      ASSERT_TRUE(tabs.back()->open(http_port())) << i;
      ASSERT_TRUE(tabs.back()->hello(i % 5 == 0 ? v1::ROLE_CONTROLLER : v1::ROLE_VIEWER)) << i;
    }
    EXPECT_EQ(settle(51), 51u);
    // Half close properly, half just vanish.
    for (int i = 0; i < 50; ++i)
      if (i % 2 == 0) tabs[static_cast<std::size_t>(i)]->close();
    tabs.clear();
    EXPECT_EQ(settle(1), 1u) << "round " << round;
  }
  std::size_t fds_after = open_fds();
  for (int i = 0; i < 100 && fds_after > fds_before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    fds_after = open_fds();
  }
  EXPECT_LE(fds_after, fds_before);
}

TEST_F(WebSocketTest, ClientsPastTheCapAreRefusedAndStopSaysGoodbye) {
  server::ServerOptions o;
  o.max_clients = 2;
  start(o);
  WsClient a, b, c;
  ASSERT_TRUE(a.open(http_port()));
  ASSERT_TRUE(a.hello(v1::ROLE_VIEWER));
  ASSERT_TRUE(b.open(http_port()));
  ASSERT_TRUE(b.hello(v1::ROLE_CONTROLLER));
  ASSERT_TRUE(c.open(http_port()));
  v1::ServerMessage m;
  ASSERT_TRUE(c.receive(&m));
  ASSERT_TRUE(m.has_error()) << m.ShortDebugString();
  EXPECT_EQ(m.error().code(), v1::SERVER_FULL);
  EXPECT_FALSE(c.receive(&m));
  // The tabs read meanwhile, as a browser does: each answers the server's
  // closing handshake.
  std::thread stopper([this] { server_->stop("test over"); });
  for (WsClient* tab : {&a, &b}) {
    bool goodbye = false;
    while (!goodbye && tab->receive(&m)) goodbye = m.has_goodbye();
    EXPECT_TRUE(goodbye);
    EXPECT_EQ(m.goodbye().reason(), "test over");
    EXPECT_FALSE(tab->receive(&m));
    EXPECT_EQ(tab->error(), websocket::error::closed) << tab->error().message();
  }  stopper.join();
}

// The WebSocket twin of ServerTest.StoppedViewer...: a tab that stops
// reading costs the tick nothing and its frames are replaced, not queued.
TEST_F(WebSocketTest, StoppedViewerDoesNotSlowTheTick) {
  server::ServerOptions o;
  o.tick_hz = 60;
  start(o);
  client::Connection ctl, fast;
  ASSERT_TRUE(tcp_connect(ctl, v1::ROLE_CONTROLLER));
  v1::Command grid;
  v1::GridGenerator& g = *grid.mutable_spawn()->add_generators()->mutable_grid();
  g.mutable_origin()->set_x(2.0);
  g.mutable_origin()->set_y(2.0);
  g.set_columns(100);
  g.set_rows(60);
  g.set_spacing(0.9);
  g.set_radius(0.25);
  g.mutable_velocity()->set_x(2.0);
  g.mutable_velocity()->set_y(1.0);
  v1::CommandResult r;
  ASSERT_TRUE(ctl.call(grid, &r));
  ASSERT_EQ(r.code(), v1::OK);  // 6000 bodies: ~100 kB snapshots
  WsClient stalled;
  ASSERT_TRUE(stalled.open(http_port()));
  const int small = 4096;
  setsockopt(stalled.native_handle(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  ASSERT_TRUE(stalled.hello(v1::ROLE_VIEWER));  // then never reads again
  fast.set_compact(false);
  ASSERT_TRUE(tcp_connect(fast, v1::ROLE_VIEWER));
  v1::Command stats;
  stats.mutable_get_stats()->set_reset_timing(true);
  ASSERT_TRUE(ctl.call(stats, &r));
  const v1::Stats before = r.stats();
  const auto t_start = Clock::now();
  std::uint64_t first = 0, last = 0, received = 0;
  while (Clock::now() - t_start < std::chrono::seconds(6)) {
    v1::ServerMessage m;
    ASSERT_TRUE(fast.receive(&m, 5.0)) << fast.error();
    if (!m.has_snapshot()) continue;
    if (first == 0) first = m.snapshot().tick();
    last = m.snapshot().tick();
    ++received;
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - t_start).count();
  stats.mutable_get_stats()->set_reset_timing(false);
  ASSERT_TRUE(ctl.call(stats, &r));
  const v1::Stats after = r.stats();
  EXPECT_NEAR(static_cast<double>(after.tick() - before.tick()) / seconds, 60.0, 60.0 * 0.02);
  EXPECT_EQ(after.late_ticks(), 0u);
  EXPECT_GE(received, static_cast<std::uint64_t>(0.95 * static_cast<double>(last - first + 1)));
  EXPECT_GT(after.snapshots_skipped(), 100u);
  EXPECT_EQ(after.clients(), 3u);
}

}  // namespace
}  // namespace carom
