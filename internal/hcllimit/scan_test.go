package hcllimit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// deep builds the shapes that drive hcl's parser one level deeper per
// repetition.
func deep(n int) map[string]string {
	return map[string]string{
		"brackets":     "a = " + strings.Repeat("[", n) + strings.Repeat("]", n),
		"braces":       "a = " + strings.Repeat("{x = ", n) + "1" + strings.Repeat("}", n),
		"parens":       "a = " + strings.Repeat("(", n) + "1" + strings.Repeat(")", n),
		"blocks":       strings.Repeat("b {\n", n) + strings.Repeat("}\n", n),
		"calls":        "a = " + strings.Repeat("upper(", n) + `"x"` + strings.Repeat(")", n),
		"not":          "a = " + strings.Repeat("!", n) + "true",
		"negate":       "a = " + strings.Repeat("-", n) + "1",
		"plus":         "a = 1" + strings.Repeat("+1", n),
		"and":          "a = true" + strings.Repeat(" && true", n),
		"compare":      "a = 1" + strings.Repeat(" <= 1", n),
		"conditional":  "a = " + strings.Repeat("true ? 1 : ", n) + "2",
		"interpolated": "a = " + strings.Repeat(`"${`, n) + "1" + strings.Repeat(`}"`, n),
		"directives":   `a = "` + strings.Repeat("%{ if true }", n) + "x" + strings.Repeat("%{ endif }", n) + `"`,
		"heredocs":     "a = " + strings.Repeat("<<EOT\n${", n) + "1" + strings.Repeat("}\nEOT\n", n),
		"in a string":  "a = \"${ " + strings.Repeat("-", n) + "1 }\"",
	}
}

func TestRefusesDeepNesting(t *testing.T) {
	for name, src := range deep(75000) {
		t.Run(name, func(t *testing.T) {
			diags := HCL("deep.hcl", []byte(src))
			if !diags.HasErrors() {
				t.Fatalf("accepted %d bytes nested 75,000 deep", len(src))
			}
			d := diags[0]
			if d.Subject == nil || d.Subject.Filename != "deep.hcl" || d.Subject.Start.Line < 1 {
				t.Fatalf("diagnostic without a position: %+v", d)
			}
		})
	}
}

// TestAcceptedParsesShallow: at the limits the same shapes are accepted
// and hcl parses them (the limit is not below what hcl needs).
func TestAcceptsUpToTheLimits(t *testing.T) {
	// Each shape adds a level or two to the open path besides its
	// repetitions (the attribute, a string around an interpolation).
	for name, src := range deep(MaxDepth / 2) {
		t.Run(name, func(t *testing.T) {
			if diags := HCL("ok.hcl", []byte(src)); diags.HasErrors() {
				t.Fatalf("refused: %s", diags.Error())
			}
			if _, diags := hclsyntax.ParseConfig([]byte(src), "ok.hcl", hcl.InitialPos); diags.HasErrors() {
				t.Fatalf("hcl: %s", diags.Error())
			}
		})
	}
}

func TestPositionAndMessage(t *testing.T) {
	src := "job \"x\" {\n  meta {\n    a = " + strings.Repeat("[", 100) + "\n  }\n}\n"
	diags := HCL("job.hcl", []byte(src))
	if !diags.HasErrors() {
		t.Fatal("accepted")
	}
	got := diags[0].Subject.Start
	// job { meta { and 62 brackets fit; the 63rd bracket is at column 9+62.
	if got.Line != 3 || got.Column != 9+MaxDepth-2 {
		t.Fatalf("position %d:%d, want 3:%d", got.Line, got.Column, 9+MaxDepth-2)
	}
	if !strings.Contains(diags[0].Detail, "64") {
		t.Fatalf("detail does not name the limit: %q", diags[0].Detail)
	}
}

// TestNotFooled: brackets inside comments, strings and heredocs, escaped
// interpolations and identifiers with dashes are not nesting.
func TestNotFooled(t *testing.T) {
	many := strings.Repeat("[", 1000)
	ops := strings.Repeat("-", 1000)
	for name, src := range map[string]string{
		"line comment":    "# " + many + "\na = 1",
		"slash comment":   "// " + many + "\na = 1",
		"block comment":   "/* " + many + " */ a = 1",
		"string":          `a = "` + many + ops + `"`,
		"escaped quote":   `a = "\"` + many + `"`,
		"escaped interp":  `a = "` + strings.Repeat("$${", 1000) + `"`,
		"heredoc":         "a = <<EOT\n" + many + "\n\"" + ops + "\nEOT\nb = 1",
		"indented":        "a = <<-EOT\n  " + many + "\n  EOT\n",
		"dashed idents":   "a = [" + strings.Repeat("foo-bar-baz, ", 1000) + "]",
		"many attributes": strings.Repeat("a = 1 + 2 - 3\n", 1000),
		"many items":      "a = [" + strings.Repeat("1 + 2, ", 1000) + "]",
		"object items":    "a = {" + strings.Repeat("k: t ? 1 : 2, ", 1000) + "}",
		"sequential":      `a = "` + strings.Repeat("${x}%{ if y }z%{ endif }", 1000) + `"`,
		"numbers":         "a = [" + strings.Repeat("1e-5, ", 1000) + "]",
	} {
		t.Run(name, func(t *testing.T) {
			if diags := HCL("ok.hcl", []byte(src)); diags.HasErrors() {
				t.Fatalf("refused: %s", diags.Error())
			}
		})
	}
}

func TestRepositoryFilesAccepted(t *testing.T) {
	files, _ := filepath.Glob("../../examples/*.hcl")
	if len(files) == 0 {
		t.Fatal("no example files found")
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if diags := HCL(f, src); diags.HasErrors() {
			t.Errorf("%s refused: %s", f, diags.Error())
		}
	}
}

func TestSize(t *testing.T) {
	big := []byte(strings.Repeat("a = 1\n", MaxSourceBytes/6+1))
	for name, fn := range map[string]func(string, []byte) hcl.Diagnostics{"hcl": HCL, "json": JSON} {
		if diags := fn("big", big); !diags.HasErrors() || diags[0].Summary != "File too large" {
			t.Fatalf("%s: %d bytes accepted: %v", name, len(big), diags)
		}
	}
}

func TestJSON(t *testing.T) {
	if diags := JSON("c.json", []byte(strings.Repeat("[", 75000)+strings.Repeat("]", 75000))); !diags.HasErrors() {
		t.Fatal("deep JSON accepted")
	}
	tmpl := `{"a": "` + strings.Repeat(`${\"`, 75000) + `"}`
	if diags := JSON("c.json", []byte(tmpl)); !diags.HasErrors() {
		t.Fatal("deep template in a JSON string accepted")
	}
	ok := `{"server": {"enabled": true, "name": "${x} [[[ {{{ "}, "list": [[1], [2]]}`
	if diags := JSON("c.json", []byte(ok)); diags.HasErrors() {
		t.Fatalf("refused: %s", diags.Error())
	}
}
