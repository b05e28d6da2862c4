// Package msgpackrpc is Drover's net/rpc codec: msgpack requests and
// responses, each an rpc.Request or rpc.Response header followed by a
// body, as github.com/hashicorp/net-rpc-msgpackrpc writes them, byte for
// byte, so servers and clients built with either codec talk to each other.
//
// What differs is the work per message. Headers are written and read by
// hand (wire.go, with a msgpackread.Reader), never through the reflection
// the generic codec uses for net/rpc's header structs. Every message is
// framed whole before it is decoded: a msgpackread.Scanner finds where the
// next msgpack item ends in the read buffer, and those bytes go to a bytes
// decoder, which is much cheaper per byte than decoding from a stream;
// bodies of types with generated codecs (the structs package) are decoded
// by them. A message is written with one Write: header and body encoded
// into one buffer.
//
// AppendRequestHeader and ReadResponseHeader are exported for a client
// that frames its own messages (agent/sim's RPC client): it writes and
// reads the same headers without a Codec.
//
// Usage, on either side of a stream:
//
//	rpcServer.ServeCodec(msgpackrpc.NewCodec(stream, structs.MsgpackHandle))
//	client := rpc.NewClientWithCodec(msgpackrpc.NewCodec(stream, structs.MsgpackHandle))
//
// It must never change what goes on the wire (field names, order, integer
// and string formats are those of the generic codec with the same
// handle), never keep a view into its buffers in a decoded value, and
// never import the packages whose types it carries.
package msgpackrpc
