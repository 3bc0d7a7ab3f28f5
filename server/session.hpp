#pragma once
/// \file Session: one client connection. Everything a Session does runs on
/// its own strand (the socket's executor); other threads only call start,
/// deliver, deliver_stream and goodbye, which post to it.
///
/// Session is the protocol (Hello, roles, commands, the stream slot, the
/// closing rules), the same for every transport; a subclass moves its
/// messages: TcpSession (delimited frames on a byte stream, here) or
/// WebSocketSession (one message per binary WebSocket message,
/// websocket_session.hpp). The transport is a virtual call per read and per
/// write, nothing per byte.
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

/// Whether the peer's address is loopback (IPv4-mapped IPv6 included): the
/// rule for control without a token. The socket's thread.
bool is_loopback_peer(const boost::asio::ip::tcp::socket& socket);
/// TCP_NODELAY and keep-alive probes that notice an idle dead peer within
/// seconds. The socket's thread.
void set_socket_options(boost::asio::ip::tcp::socket& socket);

class Session : public std::enable_shared_from_this<Session> {
 public:
  virtual ~Session();

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

 protected:
  /// `executor`: the connection's strand; `peer`: "address:port" for the log;
  /// `loopback`: whether control without a token is allowed. A subclass
  /// starts with initial_frame_limit(), until a controller's Hello raises it
  /// (set_frame_limit).
  Session(boost::asio::any_io_executor executor, Hub& hub, std::string peer, bool loopback);

  // What a transport does, on the strand.
  /// Once, before the first read: socket options and the like.
  virtual void open() {}
  /// Starts reading; each whole message goes to on_frame, a broken one to
  /// fail, a read error to close. Reading stops while the session closes.
  virtual void do_read() = 0;
  /// Writes `table` (when not null) then `frame`, both delimited frames as
  /// shared, then calls on_write.
  virtual void write(const std::string* table, const std::string& frame) = 0;
  /// The largest message the peer may send from now on, bytes.
  virtual void set_frame_limit(std::size_t bytes) = 0;
  /// Everything queued is written while closing: end the connection
  /// gracefully, then close().
  virtual void linger() = 0;
  /// Closes the connection now; pending operations end with an error.
  virtual void close_transport() = 0;

  /// One ClientMessage's bytes, as received.
  void on_frame(std::string_view bytes);
  void on_write(boost::system::error_code ec, std::size_t n);
  /// Sends an Error and closes once it is written (or after a grace period).
  /// `field`: the path at fault in the ClientMessage ("hello.role"), or "";
  /// the Error's message is "FIELD: REASON" (field_message).
  void fail(v1::ErrorCode code, const std::string& reason, const std::string& field = {});
  void close();
  bool closing() const { return phase_ == Phase::kClosing; }
  bool closed() const { return phase_ == Phase::kClosed; }
  bool control() const { return control_; }
  /// The Error that ends this session (SHUTTING_DOWN for a Goodbye), once closing.
  v1::ErrorCode closing_code() const { return closing_code_; }
  const std::string& peer() const { return peer_; }
  /// The first frame limit: 64 KiB, or --max-frame-bytes when smaller.
  std::size_t initial_frame_limit() const;
  /// shared_from_this as the subclass, for its handlers.
  template <class T>
  std::shared_ptr<T> self() {
    return std::static_pointer_cast<T>(shared_from_this());
  }

  bool reading_ = false;  // an async read is outstanding

 private:
  // Start and handshake.
  void on_start();
  void on_handshake_timeout(boost::system::error_code ec);
  // The read path: a ClientMessage (on_frame), then what it asks.
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
  // A snapshot turned away by the rate wish is held instead (see held_).
  enum class Take { kTake, kDrop, kHold };
  Take take_stream(bool snapshot);
  void hold(std::shared_ptr<const std::string> frame, std::shared_ptr<const CompactSnapshot> compact,
            std::shared_ptr<const BodyTableFrame> table);
  void on_rate_timer(boost::system::error_code ec);
  void clear_stream();
  void on_goodbye(const std::string& reason);
  void do_write();
  // Closing.
  void on_grace_timeout(boost::system::error_code ec);

  boost::asio::any_io_executor executor_;
  Hub& hub_;
  boost::asio::steady_timer timer_;  // handshake timeout, then the close grace period
  // The newest snapshot the rate wish turned away, sent when no newer one
  // has come by two intervals after the last one sent: a running world's next
  // snapshot replaces it, while paused (nothing else comes) it goes out, so a
  // rate-limited viewer is never left a tick behind.
  boost::asio::steady_timer rate_timer_;
  std::shared_ptr<const std::string> held_;
  std::shared_ptr<const CompactSnapshot> held_compact_;
  std::shared_ptr<const BodyTableFrame> held_table_;
  std::uint64_t id_ = 0;
  std::string peer_;
  bool loopback_ = false;

  enum class Phase { kHandshake, kActive, kClosing, kClosed } phase_ = Phase::kHandshake;
  v1::ErrorCode closing_code_ = v1::OK;
  bool lingering_ = false;  // linger() was called: nothing more is written
  bool control_ = false;
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

/// A Session over TCP: protobuf's delimited frames (varint32 length, then
/// the message) on the byte stream, the length limit checked before anything
/// is buffered for the frame.
class TcpSession final : public Session {
 public:
  TcpSession(boost::asio::ip::tcp::socket socket, Hub& hub);

 private:
  void open() override;
  // The read path: bytes, then frames (length prefix and limit), then
  // Session::on_frame.
  void do_read() override;
  void on_read(boost::system::error_code ec, std::size_t n);
  bool read_frames();  ///< false when the session stopped reading (it is closing)
  void write(const std::string* table, const std::string& frame) override;
  void set_frame_limit(std::size_t bytes) override { decoder_.set_max_frame(bytes); }
  void linger() override;
  void drain();
  void on_drain(boost::system::error_code ec, std::size_t n);
  void close_transport() override;

  boost::asio::ip::tcp::socket socket_;
  proto::FrameDecoder decoder_;
  // Grows from 4 KiB (a Hello, a command) to 64 KiB while reads fill it:
  // an idle or refused connection costs little.
  std::vector<char> read_buffer_ = std::vector<char>(4096);
};

/// Sends a command's result to a session that may have gone, and counts it
/// as no longer in flight. Any thread.
void send_result(const std::weak_ptr<Session>& to, v1::CommandResult result);

}  // namespace carom::server
