// Server: the composition of the parts, each in its own files as in
// Boost.Beast's chat-multi example — the listener (listener.cpp) accepts and
// makes the sessions (session.cpp), the hub (hub.cpp) is the state they share
// with the simulation thread (tick_loop.cpp), which hands each tick's capture
// to the snapshot thread (publisher.cpp). Here: the start-up order, the
// shutdown order, and the threads that run the network.
//
// Where this departs from the example: the simulation and snapshot threads
// are plain threads that meet the network at the hub's queues, not handlers
// on the io_context, so that no network handler can delay a tick and one
// thread alone touches the World (shared/design.md); and the hub is a member
// here, not a shared_ptr that each session keeps alive (see Impl).

#include "server.hpp"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <spdlog/spdlog.h>
#include <thread>
#include <vector>

#include "http_session.hpp"
#include "hub.hpp"
#include "listener.hpp"
#include "publisher.hpp"
#include "sim_state.hpp"
#include "state_file.hpp"
#include "tick_loop.hpp"

namespace carom::server {

namespace asio = boost::asio;
using asio::ip::tcp;

struct Server::Impl {
  explicit Impl(ServerOptions o) : options(std::move(o)), hub(options), publisher(hub) {}

  // Members are destroyed in reverse order: the io_context, with the
  // Sessions and the Listener that its handlers own, goes before the hub and
  // the publisher they refer to.
  ServerOptions options;
  Hub hub;
  SnapshotPublisher publisher;
  asio::io_context io{std::max(1, options.io_threads)};
  std::shared_ptr<Listener> listener = std::make_shared<Listener>(io, hub);
  std::shared_ptr<Listener> http_listener;  // with --http-port
  std::uint16_t port = 0, http_port = 0;
  std::unique_ptr<SimState> sim;
  std::unique_ptr<TickLoop> tick_loop;
  std::vector<std::thread> io_threads;

  std::mutex done_mutex;
  std::condition_variable done_cv;
  bool started = false, stopping = false, done = false;

  Status listen();
  void save_on_exit();
};

Status Server::Impl::listen() {
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(options.bind, ec);
  if (ec) return {StatusCode::kInvalidArgument, "--bind " + options.bind + ": not an IP address"};
  if (!address.is_loopback() && options.token.empty() && !options.insecure) {
    return {StatusCode::kInvalidArgument,
            "--bind " + options.bind +
                " is not loopback and no token is set: set --token (or CAROM_TOKEN), or pass --insecure"};
  }
  if (const auto listen_ec = listener->listen(tcp::endpoint(address, options.port))) {
    return {StatusCode::kInvalidArgument,
            "cannot listen on " + options.bind + ":" + std::to_string(options.port) + ": " + listen_ec.message()};
  }
  port = listener->port();
  if (options.http_port >= 0) {
    http_listener = std::make_shared<Listener>(io, hub, [this](tcp::socket socket) {
      std::make_shared<HttpSession>(std::move(socket), hub)->run();
    });
    const auto http = static_cast<std::uint16_t>(options.http_port);
    if (const auto listen_ec = http_listener->listen(tcp::endpoint(address, http))) {
      return {StatusCode::kInvalidArgument, "cannot listen on " + options.bind + ":" + std::to_string(http) +
                                                " (--http-port): " + listen_ec.message()};
    }
    http_port = http_listener->port();
  }
  return {};
}

void Server::Impl::save_on_exit() {
  for (const std::string& path : {options.save_on_exit, options.state}) {
    if (path.empty()) continue;
    if (Status st = save_state_file(*sim, path); !st.ok()) {
      spdlog::error("save on exit: {}", st.message());
    } else {
      spdlog::info("saved the world to {} (state hash {:016x})", path, sim->world().state_hash());
    }
  }
}

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Server::~Server() { stop("server shutting down"); }

Status Server::start() {
  Impl& s = *impl_;
  if (Status st = load_initial_world(s.options, &s.sim); !st.ok()) return st;
  if (Status st = s.listen(); !st.ok()) return st;
  s.listener->run();
  if (s.http_listener) s.http_listener->run();
  for (int i = 0; i < std::max(1, s.options.io_threads); ++i) s.io_threads.emplace_back([&s] { s.io.run(); });
  s.publisher.start();
  s.tick_loop = std::make_unique<TickLoop>(*s.sim, s.hub, s.publisher, s.options);
  s.tick_loop->start();
  {
    std::lock_guard lock(s.done_mutex);
    s.started = true;
  }
  return {};
}

std::uint16_t Server::port() const { return impl_->port; }

std::uint16_t Server::http_port() const { return impl_->http_port; }

void Server::stop(const std::string& reason) {
  Impl& s = *impl_;
  {
    std::unique_lock lock(s.done_mutex);
    if (!s.started || s.done) return;
    if (s.stopping) {
      s.done_cv.wait(lock, [&] { return s.done; });
      return;
    }
    s.stopping = true;
  }
  s.tick_loop->stop();
  s.publisher.stop();  // the last snapshot and results go out before the Goodbyes
  s.listener->close();
  if (s.http_listener) s.http_listener->close();
  s.hub.goodbye_all(reason);
  // Give the Goodbyes a moment to leave (each session closes after its
  // Goodbye is written and leaves the hub), at most a second; then stop the
  // network.
  (void)s.hub.wait_until_empty(std::chrono::seconds(1));
  s.io.stop();
  for (auto& t : s.io_threads) t.join();
  s.io_threads.clear();
  s.save_on_exit();
  {
    std::lock_guard lock(s.done_mutex);
    s.done = true;
  }
  s.done_cv.notify_all();
}

void Server::wait() {
  std::unique_lock lock(impl_->done_mutex);
  impl_->done_cv.wait(lock, [&] { return impl_->done || !impl_->started; });
}

}  // namespace carom::server
