package driverspec

import (
	"path/filepath"
	"sort"
	"strings"

	"github.com/drover-project/drover/structs"
)

// Names of the built-in drivers.
const (
	RawExecName = "raw_exec"
	// MockName is the mock driver's name, as Nomad's.
	MockName = "mock_driver"
	// MockAlias is also accepted for the mock driver (Drover's scheduler
	// fixtures use it).
	MockAlias = "mock"
)

// Spec is a built-in driver's config contract: its schema plus checks
// that look at several fields or at values.
type Spec struct {
	Schema Schema
	// Check runs on the decoded config (only when the schema passed) and
	// returns problems with fields named "Config.<key>".
	Check func(cfg map[string]any) []structs.FieldError
	// Capabilities are what the driver can do beyond running the task;
	// a job asking for more is refused at registration, naming the field.
	Capabilities Capabilities
}

// Capabilities of a driver that job fields depend on.
type Capabilities struct {
	// MemoryMax: the driver enforces a task's memory_max (a hard memory
	// limit above the memory it is placed with).
	MemoryMax bool
}

// RawExecSpec is raw_exec's config: command (required) and args.
var RawExecSpec = Spec{
	Schema: Schema{
		"command": {Type: TypeString, Required: true},
		"args":    {Type: TypeStringList},
	},
	Check: checkRawExec,
}

// MockSpec is the mock driver's config. run_for: how long the task runs
// (0 or unset: it exits at once); exit_code and exit_signal: how
// it ends; exit_err_msg: an error reported with the exit; start_error: Start
// fails with this message (start_error_recoverable: whether the restart
// policy applies); start_block_for: Start takes this long; kill_after: how
// long the task takes to exit once asked to stop; stdout_string: written to
// stdout at start.
var MockSpec = Spec{
	Schema: Schema{
		"run_for":                 {Type: TypeDuration},
		"exit_code":               {Type: TypeInt},
		"exit_signal":             {Type: TypeInt},
		"exit_err_msg":            {Type: TypeString},
		"start_error":             {Type: TypeString},
		"start_error_recoverable": {Type: TypeBool},
		"start_block_for":         {Type: TypeDuration},
		"kill_after":              {Type: TypeDuration},
		"stdout_string":           {Type: TypeString},
	},
	// The mock runs nothing, so it has nothing to enforce: it takes
	// memory_max, as the drivers that enforce it do, for tests.
	Capabilities: Capabilities{MemoryMax: true},
}

// builtins maps driver names to their specs.
var builtins = map[string]*Spec{
	RawExecName: &RawExecSpec,
	ExecName:    &ExecSpec,
	MockName:    &MockSpec,
	MockAlias:   &MockSpec,
}

// Builtin returns the spec of a built-in driver, or nil.
func Builtin(name string) *Spec { return builtins[name] }

// BuiltinNames lists the built-in drivers, sorted.
func BuiltinNames() []string {
	out := make([]string, 0, len(builtins))
	for n := range builtins {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Decode checks cfg against the spec and returns the normalised config.
func (s *Spec) Decode(cfg map[string]any) (map[string]any, error) {
	out, err := s.Schema.Decode(cfg)
	if err != nil {
		return nil, err
	}
	if s.Check != nil {
		if errs := s.Check(out); len(errs) > 0 {
			return nil, &structs.ValidationError{Errors: errs}
		}
	}
	return out, nil
}

// ValidateTaskConfig checks a task's config block against the named
// built-in driver's schema. It returns nil when the config is valid, a
// *structs.ValidationError whose fields are named "Config.<key>" (the
// caller prefixes the task's path), or, for a driver Drover does not know,
// a *structs.ValidationError on field "Driver".
//
// It is pure (no I/O) so the server can call it at job registration.
func ValidateTaskConfig(driver string, cfg map[string]any) error {
	spec := builtins[driver]
	if spec == nil {
		return &structs.ValidationError{Errors: []structs.FieldError{{
			Field:   "Driver",
			Message: "unknown driver " + quote(driver) + "; known: " + strings.Join(BuiltinNames(), ", "),
		}}}
	}
	_, err := spec.Decode(cfg)
	return err
}

// ValidateTaskResources checks a task's resources against what the named
// built-in driver can enforce, and returns problems with fields named
// "Resources.<field>" (the caller prefixes the task's path). A driver
// Drover does not know is not checked (placement reports it).
func ValidateTaskResources(driver string, r *structs.Resources) []structs.FieldError {
	spec := builtins[driver]
	if spec == nil || r == nil {
		return nil
	}
	if r.MemoryMaxMB > 0 && !spec.Capabilities.MemoryMax {
		return []structs.FieldError{{Field: "Resources.MemoryMaxMB",
			Message: "Drover does not support memory_max with the " + driver + " driver: it cannot enforce a memory limit " +
				"(use memory, or a driver that enforces memory_max)"}}
	}
	return nil
}

func quote(s string) string { return `"` + s + `"` }

// checkRawExec rejects a relative command that would leave the task
// directory. Absolute commands and bare names (looked up in PATH) are
// allowed: raw_exec is not confined.
func checkRawExec(cfg map[string]any) []structs.FieldError {
	cmd, _ := cfg["command"].(string)
	if strings.TrimSpace(cmd) == "" {
		return []structs.FieldError{{Field: fieldPrefix + "command", Message: "must not be empty"}}
	}
	if strings.ContainsRune(cmd, 0) {
		return []structs.FieldError{{Field: fieldPrefix + "command", Message: "must not contain a NUL byte"}}
	}
	if _, err := ResolveInTaskDir("/task", cmd); err != nil {
		return []structs.FieldError{{Field: fieldPrefix + "command", Message: err.Error()}}
	}
	return nil
}

// ResolveInTaskDir resolves a command path against a task directory: an
// absolute path is returned as is, a bare name (no slash) is returned
// unchanged for a PATH lookup, and a relative path with a slash is joined
// to taskDir and must stay inside it.
func ResolveInTaskDir(taskDir, cmd string) (string, error) {
	switch {
	case filepath.IsAbs(cmd):
		return filepath.Clean(cmd), nil
	case !strings.Contains(cmd, "/"):
		return cmd, nil
	}
	if !filepath.IsLocal(cmd) {
		return "", errEscapes
	}
	return filepath.Join(taskDir, cmd), nil
}

// errEscapes is the message for a relative path leaving the task dir.
var errEscapes = escapeError{}

type escapeError struct{}

func (escapeError) Error() string {
	return "a relative command must stay inside the task directory (no \"..\" escapes)"
}
