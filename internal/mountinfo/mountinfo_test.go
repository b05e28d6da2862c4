package mountinfo

import "testing"

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		`/plain`:            `/plain`,
		`/with\040space`:    `/with space`,
		`/tab\011and\134bs`: "/tab\tand\\bs",
		`/short\04`:         `/short\04`,
		`/notoctal\09x`:     `/notoctal\09x`,
		`\040`:              " ",
		`/end\040x`:         `/end x`,
	} {
		if got := Unescape(in); got != want {
			t.Errorf("Unescape(%q) = %q, want %q", in, got, want)
		}
	}
}
