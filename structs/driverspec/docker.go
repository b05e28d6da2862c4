package driverspec

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/drover-project/drover/structs"
)

// DockerName is the docker driver's name.
const DockerName = "docker"

func init() { builtins[DockerName] = &DockerSpec }

// dockerMountSpec is one `mount` block: type (bind, volume or tmpfs;
// volume when unset, as in Nomad), target, source, readonly and the
// options of its type.
var dockerMountSpec = Schema{
	"type":     {Type: TypeString},
	"target":   {Type: TypeString},
	"source":   {Type: TypeString},
	"readonly": {Type: TypeBool},
	"bind_options": {Type: TypeBlock, Block: Schema{
		"propagation": {Type: TypeString},
	}},
	"tmpfs_options": {Type: TypeBlock, Block: Schema{
		"size": {Type: TypeInt},
		"mode": {Type: TypeInt},
	}},
	"volume_options": {Type: TypeBlock, Block: Schema{
		"no_copy": {Type: TypeBool},
		"labels":  {Type: TypeStringMap},
		"driver_config": {Type: TypeBlock, Block: Schema{
			"name":    {Type: TypeString},
			"options": {Type: TypeStringMap},
		}},
	}},
}

// dockerUnsupported are the docker driver's keys in Nomad that Drover
// refuses by name, with what each asks for.
var dockerUnsupported = map[string]string{
	"advertise_ipv6_address": "advertise_ipv6_address (IPv6 container addresses)",
	"cpuset_cpus":            "cpuset_cpus (use resources { cores = N }, which Drover pins)",
	"cpu_hard_limit":         "cpu_hard_limit (CPU is enforced as shares)",
	"cpu_cfs_period":         "cpu_cfs_period (CPU is enforced as shares)",
	"devices":                "devices (host devices in containers)",
	"healthchecks":           "healthchecks (the image's health check settings)",
	"ipv4_address":           "ipv4_address (fixed container addresses)",
	"ipv6_address":           "ipv6_address (fixed container addresses)",
	"isolation":              "isolation (Windows containers)",
	"load":                   "load (loading an image from an artifact; Drover has no artifacts)",
	"mac_address":            "mac_address",
	"memory_hard_limit":      "memory_hard_limit (use resources { memory_max = N })",
	"network_aliases":        "network_aliases (user-defined docker networks)",
	"runtime":                "runtime (alternative container runtimes)",
	"port_map":               "port_map (the pre-0.12 port mapping; use ports = [\"label\"] with the group network's to)",
	"storage_opt":            "storage_opt",
	"volume_driver":          "volume_driver (use a mount block with volume_options)",
}

// DockerSpec is the docker driver's task config, with Nomad's keys.
var DockerSpec = Spec{Schema: dockerSchema(), Check: checkDocker, Capabilities: Capabilities{MemoryMax: true}}

func dockerSchema() Schema {
	s := Schema{
		"image":      {Type: TypeString, Required: true},
		"command":    {Type: TypeString},
		"args":       {Type: TypeStringList},
		"entrypoint": {Type: TypeStringList},
		"ports":      {Type: TypeStringList},
		// network_mode: bridge (the default), host, none, a docker
		// network's name or container:<id>.
		"network_mode": {Type: TypeString},
		"volumes":      {Type: TypeStringList},
		"mount":        {Type: TypeBlockList, Block: dockerMountSpec},
		// mounts is the pre-1.0 list syntax of mount.
		"mounts": {Type: TypeBlockList, Block: dockerMountSpec},
		"labels": {Type: TypeStringMap},
		"auth": {Type: TypeBlock, Block: Schema{
			"username":       {Type: TypeString},
			"password":       {Type: TypeString},
			"email":          {Type: TypeString},
			"server_address": {Type: TypeString},
		}},
		"auth_soft_fail":     {Type: TypeBool},
		"force_pull":         {Type: TypeBool},
		"image_pull_timeout": {Type: TypeDuration},
		"work_dir":           {Type: TypeString},
		"hostname":           {Type: TypeString},
		"extra_hosts":        {Type: TypeStringList},
		"dns_servers":        {Type: TypeStringList},
		"dns_search_domains": {Type: TypeStringList},
		"dns_options":        {Type: TypeStringList},
		"cap_add":            {Type: TypeStringList},
		"cap_drop":           {Type: TypeStringList},
		"privileged":         {Type: TypeBool},
		"init":               {Type: TypeBool},
		"logging": {Type: TypeBlock, Block: Schema{
			"type":   {Type: TypeString},
			"driver": {Type: TypeString},
			"config": {Type: TypeStringMap},
		}},
		"shm_size":        {Type: TypeInt},
		"ulimit":          {Type: TypeStringMap},
		"sysctl":          {Type: TypeStringMap},
		"tty":             {Type: TypeBool},
		"interactive":     {Type: TypeBool},
		"readonly_rootfs": {Type: TypeBool},
		"pid_mode":        {Type: TypeString},
		"ipc_mode":        {Type: TypeString},
		"uts_mode":        {Type: TypeString},
		"userns_mode":     {Type: TypeString},
		"security_opt":    {Type: TypeStringList},
		"group_add":       {Type: TypeStringList},
		"pids_limit":      {Type: TypeInt},
	}
	for k, why := range dockerUnsupported {
		s[k] = Field{Unsupported: "the docker driver's " + why}
	}
	return s
}

// checkDocker checks values the schema cannot: a non-empty image, mount
// types, volume and ulimit syntax, one logging driver, sizes.
func checkDocker(cfg map[string]any) []structs.FieldError {
	var errs []structs.FieldError
	add := func(field, format string, a ...any) {
		errs = append(errs, structs.FieldError{Field: fieldPrefix + field, Message: fmt.Sprintf(format, a...)})
	}
	if img, _ := cfg["image"].(string); strings.TrimSpace(img) == "" {
		add("image", "must not be empty")
	}
	for _, key := range []string{"mount", "mounts"} {
		ms, _ := cfg[key].([]map[string]any)
		for i, m := range ms {
			p := key + "[" + strconv.Itoa(i) + "]."
			typ, _ := m["type"].(string)
			switch typ {
			case "", "volume", "bind":
			case "tmpfs":
				if src, _ := m["source"].(string); src != "" {
					add(p+"source", "must be empty for a tmpfs mount")
				}
			default:
				add(p+"type", "must be \"bind\", \"volume\" or \"tmpfs\"; got %q", typ)
			}
			if t, _ := m["target"].(string); t == "" {
				add(p+"target", "is required")
			}
		}
	}
	vols, _ := cfg["volumes"].([]string)
	for i, v := range vols {
		parts := strings.Split(v, ":")
		if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
			add("volumes["+strconv.Itoa(i)+"]", "must be \"host_path:container_path\" (with an optional \":ro\" or \":rw\"); got %q", v)
		}
	}
	ul, _ := cfg["ulimit"].(map[string]string)
	for name, v := range ul {
		if _, _, err := ParseUlimit(v); err != nil {
			add("ulimit."+name, "%v", err)
		}
	}
	if l, ok := cfg["logging"].(map[string]any); ok {
		typ, _ := l["type"].(string)
		drv, _ := l["driver"].(string)
		if typ != "" && drv != "" && typ != drv {
			add("logging", "type %q and driver %q name different logging drivers; set one", typ, drv)
		}
	}
	for _, key := range []string{"shm_size", "pids_limit"} {
		if n, ok := cfg[key].(int64); ok && n < 0 {
			add(key, "must not be negative")
		}
	}
	return errs
}

// ParseUlimit reads a docker ulimit value: "soft:hard", or one number for
// both.
func ParseUlimit(v string) (soft, hard int64, err error) {
	s, h, two := strings.Cut(v, ":")
	soft, err = strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("must be \"soft:hard\" or a number; got %q", v)
	}
	hard = soft
	if two {
		if hard, err = strconv.ParseInt(strings.TrimSpace(h), 10, 64); err != nil {
			return 0, 0, fmt.Errorf("must be \"soft:hard\" or a number; got %q", v)
		}
		if soft > hard {
			return 0, 0, fmt.Errorf("the soft limit %d is above the hard limit %d", soft, hard)
		}
	}
	return soft, hard, nil
}

// Task directories as a task sees them when its driver gives it a file
// system of its own (an image or a chroot), as in Nomad.
const (
	IsolatedAllocDir   = "/alloc"
	IsolatedLocalDir   = "/local"
	IsolatedSecretsDir = "/secrets"
)

// isolatedFS lists the drivers whose tasks see the allocation directory
// at IsolatedAllocDir and their own at IsolatedLocalDir and
// IsolatedSecretsDir rather than at the host's paths.
var isolatedFS = map[string]bool{DockerName: true}

// IsolatedFS reports whether the named driver's tasks see the task
// directories at the Isolated* paths (NOMAD_ALLOC_DIR, NOMAD_TASK_DIR and
// NOMAD_SECRETS_DIR name those).
func IsolatedFS(driver string) bool { return isolatedFS[driver] }
