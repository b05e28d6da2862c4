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
// Fields tagged `codec:",omitempty"` are left out of msgpack when zero
// (Allocation, AllocMetric, TaskState, TaskEvent, Evaluation: the bulk of
// plan entries, client updates and snapshots). Two rules keep that from
// changing any value:
//   - Only fields whose zero value has one form carry the tag: scalars,
//     times, pointers, structs without slices or maps. Never a slice or a
//     map: nil and empty must stay different (JSON shows null or [], and
//     job diffs compare with reflect.DeepEqual).
//   - Every decoder decodes into a fresh value (the FSM, snapshot restore,
//     the RPC server, and the RPC pool, which zeroes replies), so an
//     omitted field reads as zero. Decoding into a value that already
//     holds data would keep the old value of an omitted field.
//
// Bytes written before the tags (logs, snapshots, older servers) decode
// the same: testdata/codec-golden holds entries written by the reflection
// encoder before generated code existed.
//
// After changing any type here, run `make generate` and commit the result:
// a stale file encodes only the fields that existed when it was generated,
// silently dropping the new ones. `make lint` fails while the file is
// stale; the round-trip tests fail too for any field left out.

//go:generate ../scripts/codecgen.sh
