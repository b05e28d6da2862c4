package driverspec

import (
	"fmt"
	"sort"
	"strings"

	"github.com/drover-project/drover/structs"
)

// ExecName is the exec driver's name.
const ExecName = "exec"

// Isolation modes of the exec driver's pid_mode and ipc_mode.
const (
	IsolationPrivate = "private"
	IsolationHost    = "host"
)

// ExecSpec is the exec driver's task config, as Nomad's: command
// (required), args, pid_mode and ipc_mode ("private" or "host"; unset:
// the plugin's default), cap_add and cap_drop (capability names, with or
// without "CAP_", any case; cap_drop may be ["all"]).
var ExecSpec = Spec{
	Capabilities: Capabilities{MemoryMax: true},
	Schema: Schema{
		"command":  {Type: TypeString, Required: true},
		"args":     {Type: TypeStringList},
		"pid_mode": {Type: TypeString},
		"ipc_mode": {Type: TypeString},
		"cap_add":  {Type: TypeStringList},
		"cap_drop": {Type: TypeStringList},
	},
	Check: checkExec,
}

func checkExec(cfg map[string]any) []structs.FieldError {
	errs := checkRawExec(cfg)
	for _, k := range []string{"pid_mode", "ipc_mode"} {
		if v, _ := cfg[k].(string); v != "" && v != IsolationPrivate && v != IsolationHost {
			errs = append(errs, structs.FieldError{Field: fieldPrefix + k,
				Message: fmt.Sprintf("must be %q or %q; got %q", IsolationPrivate, IsolationHost, v)})
		}
	}
	for _, k := range []string{"cap_add", "cap_drop"} {
		list, _ := cfg[k].([]string)
		for _, c := range list {
			if k == "cap_drop" && strings.EqualFold(c, "all") {
				continue
			}
			if _, ok := CapabilityNumber(c); !ok {
				errs = append(errs, structs.FieldError{Field: fieldPrefix + k,
					Message: fmt.Sprintf("unknown capability %q", c)})
			}
		}
	}
	return errs
}

// capabilities are Linux's capability names (lower case, without
// "cap_") by number.
var capabilities = []string{
	"chown", "dac_override", "dac_read_search", "fowner", "fsetid", "kill", "setgid", "setuid",
	"setpcap", "linux_immutable", "net_bind_service", "net_broadcast", "net_admin", "net_raw",
	"ipc_lock", "ipc_owner", "sys_module", "sys_rawio", "sys_chroot", "sys_ptrace", "sys_pacct",
	"sys_admin", "sys_boot", "sys_nice", "sys_resource", "sys_time", "sys_tty_config", "mknod",
	"lease", "audit_write", "audit_control", "setfcap", "mac_override", "mac_admin", "syslog",
	"wake_alarm", "block_suspend", "audit_read", "perfmon", "bpf", "checkpoint_restore",
}

// NomadDefaultCapabilities are the capabilities an exec task gets unless
// its config adds or drops some, and the plugin's default allow_caps, as
// Nomad's (Docker's defaults without net_raw).
var NomadDefaultCapabilities = []string{
	"audit_write", "chown", "dac_override", "fowner", "fsetid", "kill", "mknod",
	"net_bind_service", "setfcap", "setgid", "setpcap", "setuid", "sys_chroot",
}

// NormalizeCapability returns a capability name in lower case without
// "cap_".
func NormalizeCapability(name string) string {
	n := strings.ToLower(strings.TrimSpace(name))
	return strings.TrimPrefix(n, "cap_")
}

// CapabilityNumber returns the number of a capability name.
func CapabilityNumber(name string) (int, bool) {
	n := NormalizeCapability(name)
	for i, c := range capabilities {
		if c == n {
			return i, true
		}
	}
	return 0, false
}

// TaskCapabilities computes an exec task's capabilities as Nomad does:
// the defaults plus cap_add minus cap_drop (cap_drop ["all"] leaves only
// cap_add); every added capability must be in allow. The result is
// sorted.
func TaskCapabilities(allow, add, drop []string) ([]string, error) {
	allowed := map[string]bool{}
	for _, c := range allow {
		allowed[NormalizeCapability(c)] = true
	}
	set := map[string]bool{}
	var refused []string
	for _, c := range add {
		n := NormalizeCapability(c)
		if !allowed[n] {
			refused = append(refused, n)
		}
		set[n] = true
	}
	if len(refused) > 0 {
		sort.Strings(refused)
		return nil, fmt.Errorf("driver does not allow the following capabilities: %s", strings.Join(refused, ", "))
	}
	dropAll := false
	dropped := map[string]bool{}
	for _, c := range drop {
		if strings.EqualFold(c, "all") {
			dropAll = true
		}
		dropped[NormalizeCapability(c)] = true
	}
	if !dropAll {
		for _, c := range NomadDefaultCapabilities {
			if allowed[c] && !dropped[c] {
				set[c] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	sort.Strings(out)
	return out, nil
}
