package textdist

import "testing"

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"count", "count", 0},
		{"cout", "count", 1},    // one insertion
		{"conut", "count", 1},   // one swap of neighbours
		{"stauts", "status", 1}, // one swap
		{"job", "jbo", 1},
		{"plan", "run", 3},
		{"kitten", "sitting", 3},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d; want %d", tc.a, tc.b, got, tc.want)
		}
		if got := Distance(tc.b, tc.a); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d; want %d (not symmetric)", tc.b, tc.a, got, tc.want)
		}
	}
}
