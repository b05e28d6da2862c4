package msgpackwrite

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/drover-project/drover/structs"
)

func encode(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := codec.NewEncoder(&buf, structs.MsgpackHandle).Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The hand-written forms are the codec's, at every size boundary.
func TestSameBytesAsTheCodec(t *testing.T) {
	for _, v := range []uint64{0, 1, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000, 0xffffffff, 0x100000000, 1<<64 - 1} {
		if got, want := AppendUint(nil, v), encode(t, v); !bytes.Equal(got, want) {
			t.Errorf("AppendUint(%d) = %x, codec %x", v, got, want)
		}
	}
	for _, n := range []int{0, 1, 31, 32, 255, 256, 1<<16 - 1, 1 << 16} {
		s := strings.Repeat("x", n)
		if got, want := AppendStr(nil, s), encode(t, s); !bytes.Equal(got, want) {
			t.Errorf("AppendStr(%d bytes) = %x..., codec %x...", n, got[:min(len(got), 5)], want[:min(len(want), 5)])
		}
	}
}
