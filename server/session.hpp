#pragma once
/// \file Session: one client connection. Everything a Session does runs on
/// its own strand (the socket's executor); other threads only call start,
/// deliver, deliver_stream and goodbye, which post to it.
///
/// Outgoing messages: a queue for Welcome, CommandResult, Error and Goodbye
/// (never dropped, bounded in bytes), and one stream slot for snapshots and
/// heartbeats where the latest wins, so a slow viewer skips frames and its
/// memory stays bounded. A snapshot that refers to a body table the peer has
/// not had is written right after that table.

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <array>
#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "carom/proto/framing.hpp"
#include "carom/v1/protocol.pb.h"
#include "snapshot.hpp"

namespace carom::server {

class Hub;

/// An encoded ServerMessage with this Error: every Error the server sends is
/// built here (sessions and the refusals at the door). `field`: the path at
/// fault in the ClientMessage ("hello.role"), which `message` starts with;
/// "" for none. Any thread.
std::shared_ptr<const std::string> error_frame(v1::ErrorCode code, const std::string& message,
                                               const std::string& field = {});
/// "address:port" of the peer, for the log. The socket's thread.
std::string peer_name(const boost::asio::ip::tcp::socket& socket);

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(boost::asio::ip::tcp::socket socket, Hub& hub);
  ~Session();

  /// Registers with the hub and starts the handshake (or refuses the
  /// connection when the server is full). Any thread.
  void start();

  /// Queues a message that must arrive (results, errors). Any thread.
  void deliver(std::shared_ptr<const std::string> frame);
  /// Puts a snapshot or heartbeat in the stream slot; an unsent one is
  /// replaced. A snapshot that refers to a body table comes with it: the
  /// table is written first unless this session already sent that epoch.
  /// Any thread.
  void deliver_stream(std::shared_ptr<const std::string> frame, bool snapshot,
                      std::shared_ptr<const BodyTableFrame> table = nullptr);
  /// Puts a compact snapshot (wishes.compact) in the stream slot, like
  /// deliver_stream. Whether it goes as the shared delta or as the key frame
  /// is decided when it is written, from the compact snapshot this session
  /// wrote last. Any thread.
  void deliver_compact(std::shared_ptr<const CompactSnapshot> snapshot, std::shared_ptr<const BodyTableFrame> table);
  /// Sends Goodbye, then closes. Any thread.
  void goodbye(const std::string& reason);

  std::uint64_t id() const { return id_; }
  /// Commands queued for the simulation thread and not yet answered.
  std::atomic<int> in_flight{0};

 private:
  // Start and handshake.
  void on_start();
  void on_handshake_timeout(boost::system::error_code ec);
  // The read path: bytes, then frames (length prefix and limit), then one
  // ClientMessage, then what it asks.
  void do_read();
  void on_read(boost::system::error_code ec, std::size_t n);
  bool read_frames();  ///< false when the session stopped reading (it is closing)
  void on_frame(std::string_view bytes);
  void on_hello(const v1::Hello& hello);
  void on_command(v1::Command command);
  // The write path: results and errors queue, the stream slot, one write at
  // a time.
  void queue(std::shared_ptr<const std::string> frame);
  void on_deliver_stream(std::shared_ptr<const std::string> frame, bool snapshot,
                         std::shared_ptr<const BodyTableFrame> table);
  void on_deliver_compact(std::shared_ptr<const CompactSnapshot> snapshot, std::shared_ptr<const BodyTableFrame> table);
  // Whether a stream message is taken into the slot (the stall timeout, the
  // rate wish, a heartbeat never replacing a snapshot); counts a skipped one.
  bool take_stream(bool snapshot);
  void clear_stream();
  void on_goodbye(const std::string& reason);
  void do_write();
  void on_write(boost::system::error_code ec, std::size_t n);
  // Closing.
  /// Sends an Error and closes once it is written (or after a grace period).
  /// `field`: the path at fault in the ClientMessage ("hello.role"), or "";
  /// the Error's message is "FIELD: REASON" (field_message).
  void fail(v1::ErrorCode code, const std::string& reason, const std::string& field = {});
  void on_grace_timeout(boost::system::error_code ec);
  void linger();
  void drain();
  void on_drain(boost::system::error_code ec, std::size_t n);
  void close();

  boost::asio::ip::tcp::socket socket_;
  Hub& hub_;
  boost::asio::steady_timer timer_;  // handshake timeout, then the close grace period
  std::uint64_t id_ = 0;
  std::string peer_;
  bool loopback_ = false;
  proto::FrameDecoder decoder_;
  // Grows from 4 KiB (a Hello, a command) to 64 KiB while reads fill it:
  // an idle or refused connection costs little.
  std::vector<char> read_buffer_ = std::vector<char>(4096);

  enum class Phase { kHandshake, kActive, kClosing, kClosed } phase_ = Phase::kHandshake;
  bool control_ = false;
  bool reading_ = false;  // an async read is outstanding
  bool subscribed_ = false;
  double max_rate_hz_ = 0.0;
  std::chrono::steady_clock::time_point last_snapshot_{};
  std::chrono::steady_clock::time_point write_started_{};  // when the current write began (stall timeout)

  std::deque<std::shared_ptr<const std::string>> queue_;
  std::size_t queued_bytes_ = 0;
  std::shared_ptr<const std::string> stream_;
  std::shared_ptr<const CompactSnapshot> stream_compact_;  // in the slot instead of stream_
  std::shared_ptr<const BodyTableFrame> stream_table_;  // the table stream_ refers to, if any
  bool stream_is_snapshot_ = false;
  // The last compact snapshot written: its chain and serial (0: none).
  std::uint64_t compact_chain_ = 0, compact_serial_ = 0;
  std::uint64_t table_sent_ = 0;  // epoch of the last body table written
  std::shared_ptr<const std::string> writing_;  // the frame being written (kept alive)
  std::shared_ptr<const BodyTableFrame> writing_table_;
};

/// Sends a command's result to a session that may have gone, and counts it
/// as no longer in flight. Any thread.
void send_result(const std::weak_ptr<Session>& to, v1::CommandResult result);

}  // namespace carom::server
