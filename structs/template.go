package structs

import (
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Template change modes: what the client does once a template renders
// new content while its task runs, as in Nomad.
const (
	TemplateChangeModeNoop    = "noop"
	TemplateChangeModeRestart = "restart"
	TemplateChangeModeSignal  = "signal"
	TemplateChangeModeScript  = "script"
)

// Nomad's defaults for a template block's optional arguments (Nomad's
// api.Template.Canonicalize).
const (
	DefaultTemplateChangeMode    = TemplateChangeModeRestart
	DefaultTemplateChangeSignal  = "SIGHUP" // when change_mode = "signal"
	DefaultTemplateSplay         = 5 * time.Second
	DefaultTemplatePerms         = "0644"
	DefaultTemplateLeftDelim     = "{{"
	DefaultTemplateRightDelim    = "}}"
	DefaultChangeScriptTimeout   = 5 * time.Second
	maxTemplatesPerTask          = 100
	maxTemplateDestinationLength = 4096
)

// Template is a task's template block in Nomad's shape: a consul-template
// text (inline in EmbeddedTmpl, or the file SourcePath) that the client
// renders to DestPath, relative to the task directory, before the task
// starts, and renders again when the data it reads changes.
type Template struct {
	SourcePath   string
	DestPath     string
	EmbeddedTmpl string
	// ChangeMode says what a new rendering does to the running task:
	// noop, restart, signal (ChangeSignal) or script (ChangeScript).
	ChangeMode   string
	ChangeSignal string
	ChangeScript *ChangeScript
	// Splay bounds the random delay before a change is applied.
	Splay time.Duration
	// Perms are the file's mode, in octal ("0644"); Uid and Gid its
	// owner, when set.
	Perms string
	Uid   *int
	Gid   *int
	// LeftDelim and RightDelim are the template's delimiters.
	LeftDelim  string
	RightDelim string
	// Envvars: the rendered KEY=VALUE lines become the task's environment.
	Envvars bool
	// Wait is the quiescence window (min, max) before a re-rendering.
	Wait *WaitConfig
	// ErrMissingKey makes indexing a map with a missing key an error.
	ErrMissingKey bool
}

// ChangeScript is a template's change_script block: a command run in the
// task's environment when the template re-renders.
type ChangeScript struct {
	Command     string
	Args        []string
	Timeout     time.Duration
	FailOnError bool
}

// WaitConfig is a template's wait block; nil bounds are unset.
type WaitConfig struct {
	Min *time.Duration
	Max *time.Duration
}

// canonicalize fills what a template left empty that has no meaning
// empty (a zero splay is meaningful and stays).
func (t *Template) canonicalize() {
	if t.ChangeMode == "" {
		t.ChangeMode = DefaultTemplateChangeMode
	}
	if t.ChangeSignal == "" && t.ChangeMode == TemplateChangeModeSignal {
		t.ChangeSignal = DefaultTemplateChangeSignal
	}
	t.ChangeSignal = strings.ToUpper(t.ChangeSignal)
	if t.Perms == "" {
		t.Perms = DefaultTemplatePerms
	}
	if t.LeftDelim == "" {
		t.LeftDelim = DefaultTemplateLeftDelim
	}
	if t.RightDelim == "" {
		t.RightDelim = DefaultTemplateRightDelim
	}
	if cs := t.ChangeScript; cs != nil && cs.Timeout == 0 {
		cs.Timeout = DefaultChangeScriptTimeout
	}
}

// DestinationEscapes reports whether dest, a template destination taken
// relative to the task directory, leads out of the allocation directory
// through "..": the allocation directory is the most a template may
// write to (a task directory is one level below it, so "../alloc/x" is
// allowed, as in Nomad). Absolute destinations are placed by the client
// (see the client's template package) and are not refused here.
func DestinationEscapes(dest string) bool {
	if filepath.IsAbs(dest) {
		return false
	}
	const base = "/alloc"
	p := filepath.Join(base, "task", dest)
	return p != base && !strings.HasPrefix(p, base+"/")
}

func (t *Template) validate(v *validator, p string) {
	switch {
	case t.SourcePath == "" && t.EmbeddedTmpl == "":
		v.add(p, "must set either source or data")
	case t.SourcePath != "" && t.EmbeddedTmpl != "":
		v.add(join(p, "SourcePath"), "source and data are exclusive; set one")
	}
	switch {
	case t.DestPath == "":
		v.add(join(p, "DestPath"), "must be set (the destination)")
	case len(t.DestPath) > maxTemplateDestinationLength:
		v.add(join(p, "DestPath"), "must be at most %d bytes", maxTemplateDestinationLength)
	case strings.ContainsRune(t.DestPath, 0):
		v.add(join(p, "DestPath"), "must not contain NUL")
	case DestinationEscapes(t.DestPath):
		v.add(join(p, "DestPath"), "destination %q escapes the allocation directory", t.DestPath)
	}
	if t.SourcePath != "" && DestinationEscapes(t.SourcePath) {
		v.add(join(p, "SourcePath"), "source %q escapes the allocation directory", t.SourcePath)
	}
	switch t.ChangeMode {
	case TemplateChangeModeNoop, TemplateChangeModeRestart:
	case TemplateChangeModeSignal:
		if t.ChangeSignal == "" {
			v.add(join(p, "ChangeSignal"), "must be set when change_mode is %q", TemplateChangeModeSignal)
		}
		if t.Envvars {
			v.add(join(p, "ChangeMode"), "an env template cannot use change_mode %q (the environment is read at start)", TemplateChangeModeSignal)
		}
	case TemplateChangeModeScript:
		cs := t.ChangeScript
		switch {
		case cs == nil:
			v.add(join(p, "ChangeScript"), "must be set when change_mode is %q", TemplateChangeModeScript)
		case cs.Command == "":
			v.add(join(p, "ChangeScript.Command"), "must be set")
		case cs.Timeout < 0:
			v.add(join(p, "ChangeScript.Timeout"), "must not be negative")
		}
	default:
		v.add(join(p, "ChangeMode"), "must be one of noop, restart, signal, script; got %q", t.ChangeMode)
	}
	if t.Splay < 0 {
		v.add(join(p, "Splay"), "must not be negative")
	}
	if _, err := strconv.ParseUint(t.Perms, 8, 12); err != nil {
		v.add(join(p, "Perms"), "%q is not an octal file mode", t.Perms)
	}
	if t.Uid != nil && *t.Uid < 0 {
		v.add(join(p, "Uid"), "must not be negative")
	}
	if t.Gid != nil && *t.Gid < 0 {
		v.add(join(p, "Gid"), "must not be negative")
	}
	if t.LeftDelim == "" || t.RightDelim == "" {
		v.add(join(p, "LeftDelim"), "delimiters must not be empty")
	}
	if w := t.Wait; w != nil {
		switch {
		case w.Min != nil && *w.Min < 0:
			v.add(join(p, "Wait.Min"), "must not be negative")
		case w.Max != nil && *w.Max < 0:
			v.add(join(p, "Wait.Max"), "must not be negative")
		case w.Min != nil && w.Max != nil && *w.Max < *w.Min:
			v.add(join(p, "Wait.Max"), "must not be less than min (%s)", *w.Min)
		}
	}
}

// Copy returns a deep copy of the template.
func (t *Template) Copy() *Template {
	if t == nil {
		return nil
	}
	c := *t
	if t.ChangeScript != nil {
		cs := *t.ChangeScript
		cs.Args = append([]string(nil), t.ChangeScript.Args...)
		if t.ChangeScript.Args == nil {
			cs.Args = nil
		}
		c.ChangeScript = &cs
	}
	c.Uid = shallow(t.Uid)
	c.Gid = shallow(t.Gid)
	if t.Wait != nil {
		c.Wait = &WaitConfig{Min: shallow(t.Wait.Min), Max: shallow(t.Wait.Max)}
	}
	return &c
}
