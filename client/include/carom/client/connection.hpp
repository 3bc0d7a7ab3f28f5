#pragma once
/// \file A blocking connection to carom-server: connect, Hello/Welcome,
/// send commands, read server messages with timeouts. Used by carom-ctl,
/// carom-view, carom-bench --net and the tests.
///
/// Threading: one Connection is used by one thread at a time.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "carom/proto/framing.hpp"
#include "carom/v1/protocol.pb.h"

namespace carom::client {

/// "host:port" (or "[v6]:port", or just "host" for the default port 7878).
struct Address {
  std::string host = "127.0.0.1";
  std::uint16_t port = 7878;
};
/// Parses an address; false (and *error) if it is not one.
bool parse_address(std::string_view text, Address* out, std::string* error);

/// Nanoseconds of CLOCK_MONOTONIC, the clock of Snapshot.server_time_ns.
using proto::monotonic_ns;

/// Fills in what Connection::connect() adds to a Hello: protocol_version
/// when 0 and, for a Hello that wants snapshots with bodies, body tables
/// (with `body_tables`) and the compact stream with compact events (with
/// `compact` too). For clients on another transport (a WebSocket) that
/// decode with a StreamDecoder.
void add_stream_wishes(v1::Hello* hello, bool body_tables, bool compact);

/// What Connection::receive() does with each server message, for messages
/// that come by another transport (a WebSocket: one message per binary
/// message): keeps body tables, decodes the compact stream and its events,
/// fills ids and radii back in. One thread at a time.
class StreamDecoder {
 public:
  enum class Result {
    kMessage,  ///< ready for the caller (a snapshot decoded and filled in)
    kKept,     ///< a body table, kept for the snapshots that follow
    kError,    ///< the stream cannot be read on (*error says why)
  };
  StreamDecoder();
  ~StreamDecoder();
  StreamDecoder(StreamDecoder&&) noexcept;
  StreamDecoder& operator=(StreamDecoder&&) noexcept;

  /// Takes the next message of the stream, as parsed, in arrival order.
  Result take(v1::ServerMessage* message, std::string* error);
  /// Forgets the table and the compact state (a new connection).
  void reset();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

class Connection {
 public:
  Connection();
  ~Connection();
  Connection(Connection&&) noexcept;
  Connection& operator=(Connection&&) noexcept;

  /// Connects, sends `hello` (protocol_version filled in when 0) and waits
  /// for the Welcome. False on any failure, with the reason in error()
  /// (including the server's own Error message). When the Hello asks for
  /// snapshots with bodies, it also asks for body tables (unless
  /// set_body_tables(false)): see receive().
  bool connect(const Address& address, v1::Hello hello, double timeout_s = 5.0);
  /// Whether connect() asks for body tables (default true): ids and radii
  /// travel only when they change, so snapshots are about half the bytes.
  /// receive() hides the difference either way.
  void set_body_tables(bool on) { body_tables_ = on; }
  /// Whether connect() asks for the compact stream (default true; needs
  /// body tables, so set_body_tables(false) turns it off too): positions quantized to wishes.position_quantum (1 mm by
  /// default) and delta-coded, about a quarter of the bytes of a plain
  /// snapshot for a moving gas and a thirtieth for a settled pile. receive()
  /// decodes it into x, y (vx, vy) exactly as the server quantized them.
  void set_compact(bool on) { compact_ = on; }
  const v1::Welcome& welcome() const { return welcome_; }
  /// Opens the TCP connection only, without a Hello (raw protocol use, tests).
  bool open(const Address& address);
  /// The socket, for socket options. -1 when closed.
  int native_handle();
  bool connected() const;

  /// Sends one framed message. False (error()) if the connection is gone.
  bool send(const v1::ClientMessage& message);
  /// Sends raw bytes as they are (tests use it for bad frames).
  bool send_raw(std::string_view bytes);
  /// Next server message, waiting at most timeout_s. False on timeout
  /// (error() says "timed out"), closed connection or unreadable frame.
  /// BodyTable messages are kept, not returned: a snapshot that refers to one
  /// comes back with its id and radius filled in from it (body_table still
  /// names the epoch), so every snapshot has id, x, y and radius alike.
  /// A compact snapshot comes back decoded the same way: x, y (and vx, vy)
  /// filled in, `compact` kept (for its sizes), and its compact_events
  /// decoded into `events` (points quantized, impulses as bfloat16s, speeds
  /// when wishes.event_speeds asked for them; kept too).
  bool receive(v1::ServerMessage* out, double timeout_s);
  /// Sends a command with a fresh request id (unless one is set) and waits
  /// for its CommandResult, skipping snapshots. Returns true when a result
  /// arrived (check result->code()); false on transport errors or an Error.
  bool call(v1::Command command, v1::CommandResult* result, double timeout_s = 30.0);

  /// Closes the socket (no Goodbye: clients just leave).
  void close();
  /// Why the last call failed.
  const std::string& error() const { return error_; }
  /// Bytes received so far (frames and prefixes).
  std::uint64_t bytes_received() const { return bytes_received_; }
  /// BodyTable messages received so far.
  std::uint64_t body_tables_received() const { return body_tables_received_; }

 private:
  bool fail(std::string why);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  v1::Welcome welcome_;
  std::string error_;
  std::uint64_t next_request_ = 1;
  std::uint64_t bytes_received_ = 0;
  bool body_tables_ = true;
  bool compact_ = true;
  std::uint64_t body_tables_received_ = 0;
};

/// Human-readable name of an error code ("INVALID_ARGUMENT").
std::string code_name(v1::ErrorCode code);

}  // namespace carom::client
