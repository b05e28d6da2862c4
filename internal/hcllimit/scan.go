package hcllimit

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
)

// Limits. They are far above what a hand-written job or configuration
// uses (Nomad's example jobs nest at most 8 deep and chain a handful of
// operators) and far below what overflows the stack (hundreds of
// thousands of levels with Go's 1 GB stack limit).
const (
	// MaxDepth bounds nesting: open brackets, braces and parentheses
	// (blocks and object and list constructors included), quoted strings,
	// heredocs, template interpolations (${ }) and template if and for
	// directives, counted together along the open path.
	MaxDepth = 64
	// MaxOperators bounds the operators (unary, binary and the ? of a
	// conditional) in the unfinished expressions along the open path: an
	// operator chain parses and evaluates as a nested tree.
	MaxOperators = 256
	// MaxSourceBytes bounds one file. A job is at most 1 MiB encoded
	// (structs.MaxJobSize); HCL this much larger would not fit anyway.
	MaxSourceBytes = 4 << 20
)

// frame kinds
const (
	kTop      = iota // the file's top level (expression mode)
	kGroup           // ( [ {  (expression mode)
	kInterp          // ${ or %{ inside a template (expression mode)
	kString          // "..." (template mode)
	kHeredoc         // <<EOF ... EOF (template mode)
	kTemplate        // a whole template with no delimiter (template mode)
)

type frame struct {
	kind       int
	marker     []byte // heredoc: the closing marker
	ops        int    // operators of the expression in progress here
	cond       int    // ? still waiting for their :
	directives int    // open %{ if } and %{ for } in this template
}

type scanner struct {
	filename string
	src      []byte
	stack    []frame
	depth    int // open frames (not the base) plus open directives
	ops      int // sum of the frames' ops
	diag     *hcl.Diagnostic
}

// HCL checks native-syntax HCL (a job file, a variable file, an agent
// configuration file). It returns one error diagnostic, or nil.
func HCL(filename string, src []byte) hcl.Diagnostics {
	return check(filename, src, kTop)
}

// Expression checks a single HCL expression (a -var value read as HCL).
func Expression(filename string, src []byte) hcl.Diagnostics {
	return check(filename, src, kTop)
}

// Template checks a template without delimiters, as hcl's JSON syntax
// reads string values.
func Template(filename string, src []byte) hcl.Diagnostics {
	return check(filename, src, kTemplate)
}

func check(filename string, src []byte, base int) hcl.Diagnostics {
	if d := sizeDiag(filename, src); d != nil {
		return hcl.Diagnostics{d}
	}
	s := &scanner{filename: filename, src: src, stack: []frame{{kind: base}}}
	s.run(0, len(src))
	if s.diag != nil {
		return hcl.Diagnostics{s.diag}
	}
	return nil
}

func sizeDiag(filename string, src []byte) *hcl.Diagnostic {
	if len(src) <= MaxSourceBytes {
		return nil
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "File too large",
		Detail:   fmt.Sprintf("the file is %d bytes; the limit is %d (4 MiB)", len(src), MaxSourceBytes),
		Subject:  &hcl.Range{Filename: filename, Start: hcl.InitialPos, End: hcl.InitialPos},
	}
}

func (s *scanner) top() *frame { return &s.stack[len(s.stack)-1] }

// fail records the first problem, at byte offset off.
func (s *scanner) fail(off int, summary, detail string) {
	if s.diag != nil {
		return
	}
	pos := position(s.src, off)
	s.diag = &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   detail,
		Subject:  &hcl.Range{Filename: s.filename, Start: pos, End: pos},
	}
}

func (s *scanner) tooDeep(off int) {
	s.fail(off, "Nesting too deep", fmt.Sprintf(
		"brackets, braces, parentheses, strings, heredocs and template interpolations and directives nest more than %d deep here; the limit protects the parser's stack", MaxDepth))
}

func (s *scanner) push(off int, f frame) {
	s.stack = append(s.stack, f)
	if s.depth++; s.depth > MaxDepth {
		s.tooDeep(off)
	}
}

func (s *scanner) pop() {
	if len(s.stack) == 1 {
		return // an unmatched closer: hcl reports it
	}
	f := s.top()
	s.depth -= 1 + f.directives
	s.ops -= f.ops
	s.stack = s.stack[:len(s.stack)-1]
}

// operator counts one operator of the expression in progress.
func (s *scanner) operator(off int) {
	s.top().ops++
	if s.ops++; s.ops > MaxOperators {
		s.fail(off, "Expression too complex", fmt.Sprintf(
			"more than %d operators are chained in the expressions open here; the limit protects the parser's stack", MaxOperators))
	}
}

// separator ends the expression in progress in the current frame (a ,
// between items, an = or : before a value).
func (s *scanner) separator() {
	f := s.top()
	s.ops -= f.ops
	f.ops, f.cond = 0, 0
}

// run walks src[i:end].
func (s *scanner) run(i, end int) {
	for i < end && s.diag == nil {
		switch s.top().kind {
		case kTop, kGroup, kInterp:
			i = s.expr(i, end)
		default:
			i = s.text(i, end)
		}
	}
}

// expr walks expression-mode source from i until the mode changes; it
// returns where to go on.
func (s *scanner) expr(i, end int) int {
	src := s.src
	for i < end && s.diag == nil {
		c := src[i]
		switch {
		case c == '#' || (c == '/' && i+1 < end && src[i+1] == '/'):
			for i < end && src[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < end && src[i+1] == '*':
			i += 2
			for i < end && !(src[i] == '*' && i+1 < end && src[i+1] == '/') {
				i++
			}
			i += 2
		case c == '"':
			s.push(i, frame{kind: kString})
			return i + 1
		case c == '<' && i+1 < end && src[i+1] == '<':
			if next, ok := s.heredoc(i, end); ok {
				return next
			}
			s.operator(i)
			i += 2
		case c == '(' || c == '[' || c == '{':
			s.push(i, frame{kind: kGroup})
			i++
		case c == ')' || c == ']' || c == '}':
			wasInterp := s.top().kind == kInterp
			s.pop()
			i++
			if wasInterp {
				return i
			}
		case c == ',':
			s.separator()
			i++
		case c == '=':
			switch {
			case i+1 < end && src[i+1] == '=':
				s.operator(i)
				i += 2
			default: // an assignment, or => in a for expression
				s.separator()
				i++
			}
		case c == '?':
			s.top().cond++
			s.operator(i)
			i++
		case c == ':':
			if f := s.top(); f.cond > 0 {
				f.cond--
			} else {
				s.separator()
			}
			i++
		case c == '!' || c == '<' || c == '>':
			s.operator(i)
			i++
			if i < end && src[i] == '=' {
				i++
			}
		case c == '&' || c == '|':
			s.operator(i)
			i++
			if i < end && src[i] == c {
				i++
			}
		case c == '-' || c == '+' || c == '*' || c == '/' || c == '%':
			s.operator(i)
			i++
		case c >= '0' && c <= '9':
			i = skipNumber(src, i, end)
		case isIdentStart(c):
			i++
			for i < end && (isIdentStart(src[i]) || src[i] == '-' || (src[i] >= '0' && src[i] <= '9')) {
				i++
			}
		default:
			i++
		}
	}
	return i
}

// heredoc opens a heredoc at src[i:] ("<<" or "<<-", an identifier, a
// newline) and returns where its body starts; ok is false when src[i:] is
// not a heredoc opener.
func (s *scanner) heredoc(i, end int) (int, bool) {
	src := s.src
	j := i + 2
	if j < end && src[j] == '-' {
		j++
	}
	start := j
	for j < end && (isIdentStart(src[j]) || src[j] == '-' || (src[j] >= '0' && src[j] <= '9')) {
		j++
	}
	if j == start {
		return 0, false
	}
	marker := src[start:j]
	if j < end && src[j] == '\r' {
		j++
	}
	if j >= end || src[j] != '\n' {
		return 0, false
	}
	s.push(i, frame{kind: kHeredoc, marker: marker})
	return j + 1, true
}

// text walks template-mode source (a quoted string, a heredoc body, a
// bare template) from i until the mode changes.
func (s *scanner) text(i, end int) int {
	src := s.src
	f := s.top()
	lineStart := f.kind == kHeredoc && (i == 0 || src[i-1] == '\n')
	for i < end && s.diag == nil {
		if lineStart {
			lineStart = false
			if n, ok := closesHeredoc(src, i, end, f.marker); ok {
				s.pop()
				return n
			}
		}
		c := src[i]
		switch {
		case c == '\\' && f.kind == kString:
			i += 2
		case c == '"' && f.kind == kString:
			s.pop()
			return i + 1
		case c == '\n':
			if f.kind == kString { // an unterminated string: hcl reports it
				s.pop()
				return i + 1
			}
			lineStart = f.kind == kHeredoc
			i++
		case (c == '$' || c == '%') && i+2 < end && src[i+1] == c && src[i+2] == '{':
			i += 3 // $${ and %%{ are literal
		case (c == '$' || c == '%') && i+1 < end && src[i+1] == '{':
			if c == '%' {
				s.directive(f, i, end)
			}
			s.push(i, frame{kind: kInterp})
			return i + 2
		default:
			i++
		}
	}
	return i
}

// directive counts a template directive opened at src[i] ("%{"): if and
// for open a level that endif and endfor close.
func (s *scanner) directive(f *frame, i, end int) {
	j := i + 2
	for j < end && (s.src[j] == '~' || s.src[j] == ' ' || s.src[j] == '\t' || s.src[j] == '\r' || s.src[j] == '\n') {
		j++
	}
	k := j
	for k < end && isIdentStart(s.src[k]) {
		k++
	}
	switch string(s.src[j:k]) {
	case "if", "for":
		f.directives++
		if s.depth++; s.depth > MaxDepth {
			s.tooDeep(i)
		}
	case "endif", "endfor":
		if f.directives > 0 {
			f.directives--
			s.depth--
		}
	}
}

// closesHeredoc reports whether the line at src[i:] is the heredoc's
// closing marker (after optional indentation) and returns where the line
// ends.
func closesHeredoc(src []byte, i, end int, marker []byte) (int, bool) {
	for i < end && (src[i] == ' ' || src[i] == '\t') {
		i++
	}
	if end-i < len(marker) || string(src[i:i+len(marker)]) != string(marker) {
		return 0, false
	}
	j := i + len(marker)
	if j < end && src[j] == '\r' {
		j++
	}
	if j < end && src[j] != '\n' {
		return 0, false
	}
	return j, true
}

func skipNumber(src []byte, i, end int) int {
	for i < end {
		c := src[i]
		switch {
		case c >= '0' && c <= '9', c == '.':
			i++
		case c == 'e' || c == 'E':
			i++
			if i < end && (src[i] == '+' || src[i] == '-') {
				i++
			}
		default:
			return i
		}
	}
	return i
}

// isIdentStart reports whether c may start an identifier; bytes of
// multi-byte characters count as letters.
func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80
}

// position converts a byte offset to a 1-based line and column (in
// characters), as hcl reports them.
func position(src []byte, off int) hcl.Pos {
	if off > len(src) {
		off = len(src)
	}
	line, lineStart := 1, 0
	for i := 0; i < off; i++ {
		if src[i] == '\n' {
			line++
			lineStart = i + 1
		}
	}
	return hcl.Pos{Line: line, Column: utf8.RuneCount(src[lineStart:off]) + 1, Byte: off}
}

// JSON checks HCL's JSON syntax (an agent configuration file ending in
// .json): the nesting of arrays and objects, and each string that holds a
// template (hcl evaluates "${...}" in JSON strings) as a template.
func JSON(filename string, src []byte) hcl.Diagnostics {
	if d := sizeDiag(filename, src); d != nil {
		return hcl.Diagnostics{d}
	}
	s := &scanner{filename: filename, src: src}
	depth := 0
	for i := 0; i < len(src) && s.diag == nil; i++ {
		switch src[i] {
		case '[', '{':
			if depth++; depth > MaxDepth {
				s.tooDeep(i)
			}
		case ']', '}':
			if depth > 0 {
				depth--
			}
		case '"':
			start := i
			i++
			template := false
			for i < len(src) && src[i] != '"' {
				if src[i] == '\\' {
					i++
				} else if (src[i] == '$' || src[i] == '%') && i+1 < len(src) && src[i+1] == '{' {
					template = true
				}
				i++
			}
			if template && i < len(src) {
				s.jsonTemplate(start, i+1)
			}
		}
	}
	if s.diag != nil {
		return hcl.Diagnostics{s.diag}
	}
	return nil
}

// jsonTemplate checks the JSON string literal src[start:end] as a
// template; a problem is reported at the string's start.
func (s *scanner) jsonTemplate(start, end int) {
	var text string
	if err := json.Unmarshal(s.src[start:end], &text); err != nil {
		return // not a valid string: hcl reports it
	}
	if diags := Template(s.filename, []byte(text)); diags.HasErrors() {
		d := diags[0]
		s.fail(start, d.Summary, d.Detail+" (in this string)")
	}
}
