package jobspec

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden .err files")

// TestErrorGolden parses every testdata/errors/*.hcl and compares the
// error text, one "file:line:column: summary: detail" line per problem,
// with the .err file beside it. Run with -update to rewrite them.
func TestErrorGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/errors/*.hcl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".hcl")
		t.Run(name, func(t *testing.T) {
			var vars map[string]string
			if name == "variables" {
				vars = map[string]string{"undeclared": "1"}
			}
			job, err := ParseFile(file, &Options{Vars: vars})
			if err == nil {
				t.Fatalf("parsed without error: %+v", job)
			}
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("error %T is not *jobspec.Error: %v", err, err)
			}
			for _, d := range perr.Diags {
				if d.File == file && d.Line == 0 {
					t.Errorf("diagnostic without a position: %s", d)
				}
			}
			got := err.Error() + "\n"
			golden := strings.TrimSuffix(file, ".hcl") + ".err"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("reading golden file (run with -update to create it): %v", err)
			}
			if got != string(want) {
				t.Fatalf("errors differ from %s\ngot:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}
