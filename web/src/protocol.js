// The protocol's messages, from the descriptor of proto/carom/v1/*.proto that
// the build makes (tools/descriptor.mjs). protobufjs's light build: it reads
// the descriptor, not .proto text.

import protobuf from "protobufjs/light.js";

// 64-bit fields (ticks, request ids) as plain numbers: exact below 2^53,
// which a tick at 1000 Hz reaches after 285 000 years.
protobuf.util.Long = undefined;
protobuf.configure();

/// The carom.v1 types the page speaks, built from a JSON descriptor:
/// {ClientMessage, ServerMessage, ErrorCode (number -> name), root}.
export function makeProtocol(descriptor) {
  const root = protobuf.Root.fromJSON(descriptor);
  const codes = root.lookupEnum("carom.v1.ErrorCode");
  return {
    root,
    ClientMessage: root.lookupType("carom.v1.ClientMessage"),
    ServerMessage: root.lookupType("carom.v1.ServerMessage"),
    errorName: (code) => codes.valuesById[code] ?? `error ${code}`,
    roleViewer: root.lookupEnum("carom.v1.Role").values.ROLE_VIEWER,
    roleController: root.lookupEnum("carom.v1.Role").values.ROLE_CONTROLLER,
  };
}
