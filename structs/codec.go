package structs

// Generated msgpack code.
//
// structs.generated.go holds codecgen's encoders and decoders (codec.Selfer
// methods) for the exported types of this package that cross Raft, RPC or
// snapshots. Every msgpack user of these types (Encode, Decode, the FSM, the
// snapshot writer and reader, the RPC codecs) picks them up through
// MsgpackHandle without reflection; the bytes are the same as the
// reflection path writes, field names and all.
//
// After changing any type here, run `make generate` and commit the result:
// a stale file encodes only the fields that existed when it was generated,
// silently dropping the new ones. `make lint` fails while the file is
// stale; the round-trip tests fail too for any field left out.

//go:generate ../scripts/codecgen.sh
