package structs

import (
	"strings"
	"testing"
)

func TestVariableValidate(t *testing.T) {
	items := VariableItems{"k": "v"}
	cases := []struct {
		ns, path string
		items    VariableItems
		code     ErrorCode
	}{
		{"default", "nomad/jobs/web", items, ""},
		{"default", "nomad/jobs", items, ""},
		{"default", "a/b-c_d~e", items, ""},
		{"default", "nomad/job-templates/t", items, ""},
		{"default", "", items, ErrCodeInvalid},
		{"default", "a.b", items, ErrCodeInvalid},
		{"default", strings.Repeat("a", 129), items, ErrCodeInvalid},
		{"default", "nomad", items, ErrCodeInvalid},
		{"default", "nomad/other", items, ErrCodeInvalid},
		{"default", "nomad/job-templates", items, ErrCodeInvalid},
		{"default", "nomad/job-templates/a/b", items, ErrCodeInvalid},
		{"*", "x", items, ErrCodeInvalid},
		{"default", "x", nil, ErrCodeInvalid},
		{"default", "x", VariableItems{"k": strings.Repeat("v", MaxVariableSize)}, ErrCodeTooLarge},
	}
	for _, c := range cases {
		v := &VariableDecrypted{VariableMetadata: VariableMetadata{Namespace: c.ns, Path: c.path}, Items: c.items}
		if got := CodeOf(v.Validate()); got != c.code {
			t.Errorf("%q in %q: code %q, want %q (%v)", c.path, c.ns, got, c.code, v.Validate())
		}
	}
	// Exactly 64 KiB is allowed.
	v := &VariableDecrypted{VariableMetadata: VariableMetadata{Path: "x"}, Items: VariableItems{"k": strings.Repeat("v", MaxVariableSize-1)}}
	if err := v.Validate(); err != nil {
		t.Fatal(err)
	}
}
