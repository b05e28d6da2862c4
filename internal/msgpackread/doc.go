// Package msgpackread reads msgpack by hand, without reflection and
// without copying: a Scanner finds where items end in a buffer that is
// still arriving, and a Reader reads the items of a whole buffer one at a
// time (map and array headers, strings as views, unsigned integers) and
// steps over the rest.
//
// It serves the two places that read RPC messages byte by byte: the RPC
// codec (internal/msgpackrpc frames each message with a Scanner and reads
// the rpc headers with a Reader) and the node simulator (agent/sim frames
// the responses of its own client and reads the few fields it needs of
// large answers).
//
// It must never decode into structs (that is the codec's work), never copy
// what it reads (strings it returns are views into the caller's buffer,
// valid as long as that buffer is), and never import anything but the
// standard library.
package msgpackread
