package jobspec

import (
	"fmt"
	"sort"
	"strings"

	"github.com/drover-project/drover/internal/textdist"
	"github.com/hashicorp/hcl/v2"
)

// Diag is one problem in a job file. Line and Column are 1-based; both are
// 0 when the problem has no position (a missing file, a JSON field).
type Diag struct {
	File    string
	Line    int
	Column  int
	Summary string
	Detail  string
}

// String renders the diagnostic as "file:line:column: summary: detail"
// (without the position parts it does not have).
func (d Diag) String() string {
	var b strings.Builder
	if d.File != "" {
		b.WriteString(d.File)
		if d.Line > 0 {
			fmt.Fprintf(&b, ":%d:%d", d.Line, d.Column)
		}
		b.WriteString(": ")
	}
	b.WriteString(d.Summary)
	if d.Detail != "" {
		b.WriteString(": ")
		b.WriteString(d.Detail)
	}
	return b.String()
}

// Error is every problem found in one job file, in file order.
type Error struct {
	Diags []Diag
}

// Error returns one line per problem.
func (e *Error) Error() string {
	lines := make([]string, len(e.Diags))
	for i, d := range e.Diags {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}

// errorFromHCL converts the error diagnostics in diags, sorted by position
// and without duplicates; nil when there are none.
func errorFromHCL(diags hcl.Diagnostics) error {
	var out []Diag
	seen := map[string]bool{}
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		dg := Diag{Summary: d.Summary, Detail: strings.TrimSpace(d.Detail)}
		if d.Subject != nil {
			dg.File = d.Subject.Filename
			dg.Line = d.Subject.Start.Line
			dg.Column = d.Subject.Start.Column
		}
		if k := dg.String(); !seen[k] {
			seen[k] = true
			out = append(out, dg)
		}
	}
	if len(out) == 0 {
		return nil
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	return &Error{Diags: out}
}

// diagAt returns an error diagnostic for rng.
func diagAt(rng hcl.Range, summary, format string, args ...any) *hcl.Diagnostic {
	r := rng
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary,
		Detail: fmt.Sprintf(format, args...), Subject: &r}
}

// suggest returns the candidate closest to name (edit distance at most 2),
// or "".
func suggest(name string, candidates []string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		if d := textdist.Distance(name, c); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}
