// The protocol's .proto files as a protobufjs JSON descriptor, read with
// protobufjs's own parser at build time: the page then carries the schema of
// the very files the server is built from, and no parser.

import path from "node:path";
import protobuf from "protobufjs";

/// The descriptor of carom/v1/protocol.proto (and what it imports) under
/// protoRoot, field names kept as the .proto spells them (snake_case, the
/// names Error.field and CommandResult.field use).
export function loadDescriptor(protoRoot) {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => path.resolve(protoRoot, target);
  root.loadSync("carom/v1/protocol.proto", {keepCase: true});
  return root.toJSON();
}
