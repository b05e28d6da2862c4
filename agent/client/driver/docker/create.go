package docker

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	units "github.com/docker/go-units"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/drover-project/drover/agent/client/allocdir"
	"github.com/drover-project/drover/agent/client/driver"
	"github.com/drover-project/drover/structs/driverspec"
)

// Labels put on every container, named as Nomad names them.
const (
	labelAllocID   = "com.hashicorp.nomad.alloc_id"
	labelJobName   = "com.hashicorp.nomad.job_name"
	labelTaskGroup = "com.hashicorp.nomad.task_group_name"
	labelTaskName  = "com.hashicorp.nomad.task_name"
	labelNamespace = "com.hashicorp.nomad.namespace"
)

// Logging defaults: Nomad's json-file with two files of 2 MB.
const defaultLogType = "json-file"

var defaultLogConfig = map[string]string{"max-file": "2", "max-size": "2m"}

// taskConfig is a decoded task config (driverspec.DockerSpec).
type taskConfig struct {
	image          string
	command        string
	args           []string
	entrypoint     []string
	ports          []string
	networkMode    string
	volumes        []string
	mounts         []map[string]any
	labels         map[string]string
	auth           map[string]any
	authSoftFail   bool
	forcePull      bool
	pullTimeout    time.Duration
	workDir        string
	hostname       string
	extraHosts     []string
	dnsServers     []string
	dnsSearch      []string
	dnsOptions     []string
	capAdd         []string
	capDrop        []string
	privileged     bool
	init           bool
	logType        string
	logConfig      map[string]string
	shmSize        int64
	ulimit         map[string]string
	sysctl         map[string]string
	tty            bool
	interactive    bool
	readonlyRootfs bool
	pidMode        string
	ipcMode        string
	utsMode        string
	usernsMode     string
	securityOpt    []string
	groupAdd       []string
	pidsLimit      int64
}

// parseTaskConfig reads a config decoded by driverspec.DockerSpec.
func parseTaskConfig(c map[string]any) *taskConfig {
	str := func(k string) string { s, _ := c[k].(string); return s }
	list := func(k string) []string { l, _ := c[k].([]string); return l }
	smap := func(k string) map[string]string { m, _ := c[k].(map[string]string); return m }
	flag := func(k string) bool { b, _ := c[k].(bool); return b }
	num := func(k string) int64 { n, _ := c[k].(int64); return n }
	tc := &taskConfig{
		image: str("image"), command: str("command"), args: list("args"), entrypoint: list("entrypoint"),
		ports: list("ports"), networkMode: str("network_mode"), volumes: list("volumes"),
		labels: smap("labels"), authSoftFail: flag("auth_soft_fail"), forcePull: flag("force_pull"),
		workDir: str("work_dir"), hostname: str("hostname"), extraHosts: list("extra_hosts"),
		dnsServers: list("dns_servers"), dnsSearch: list("dns_search_domains"), dnsOptions: list("dns_options"),
		capAdd: list("cap_add"), capDrop: list("cap_drop"), privileged: flag("privileged"), init: flag("init"),
		shmSize: num("shm_size"), ulimit: smap("ulimit"), sysctl: smap("sysctl"), tty: flag("tty"),
		interactive: flag("interactive"), readonlyRootfs: flag("readonly_rootfs"), pidMode: str("pid_mode"),
		ipcMode: str("ipc_mode"), utsMode: str("uts_mode"), usernsMode: str("userns_mode"),
		securityOpt: list("security_opt"), groupAdd: list("group_add"), pidsLimit: num("pids_limit"),
		pullTimeout: DefaultPullTimeout,
	}
	if d, ok := c["image_pull_timeout"].(time.Duration); ok && d > 0 {
		tc.pullTimeout = d
	}
	for _, k := range []string{"mount", "mounts"} {
		ms, _ := c[k].([]map[string]any)
		tc.mounts = append(tc.mounts, ms...)
	}
	tc.auth, _ = c["auth"].(map[string]any)
	if l, ok := c["logging"].(map[string]any); ok {
		tc.logType, _ = l["type"].(string)
		if tc.logType == "" {
			tc.logType, _ = l["driver"].(string)
		}
		tc.logConfig, _ = l["config"].(map[string]string)
	}
	return tc
}

// createOptions builds the container's create request.
func (d *Driver) createOptions(cfg *driver.TaskConfig, tc *taskConfig, cores []int) (client.ContainerCreateOptions, error) {
	if tc.privileged && !d.cfg.AllowPrivileged {
		return client.ContainerCreateOptions{}, fmt.Errorf(`docker privileged mode is disabled on this client (plugin "docker" { config { allow_privileged = true } })`)
	}
	env := make(map[string]string, len(cfg.Env)+1)
	for k, v := range cfg.Env {
		env[k] = v
	}
	if len(cores) > 0 {
		env["NOMAD_CPU_CORES"] = cpuset(cores)
	}
	cc := &container.Config{
		Image: tc.image, Env: envList(env), Hostname: tc.hostname, WorkingDir: tc.workDir,
		Tty: tc.tty, OpenStdin: tc.interactive, StdinOnce: false,
		Labels: make(map[string]string, len(tc.labels)+5),
	}
	for k, v := range tc.labels {
		cc.Labels[k] = v
	}
	// The client's labels win: Adopt trusts the allocation label.
	for k, v := range map[string]string{labelAllocID: cfg.AllocID, labelJobName: cfg.JobName,
		labelTaskGroup: cfg.GroupName, labelTaskName: cfg.TaskName, labelNamespace: cfg.Namespace} {
		cc.Labels[k] = v
	}
	if tc.command != "" {
		cc.Cmd = append([]string{tc.command}, tc.args...)
	} else if len(tc.args) > 0 {
		cc.Cmd = tc.args
	}
	if len(tc.entrypoint) > 0 {
		cc.Entrypoint = tc.entrypoint
	}
	hc := &container.HostConfig{
		NetworkMode: container.NetworkMode(tc.networkMode),
		CapAdd:      tc.capAdd, CapDrop: tc.capDrop, ExtraHosts: tc.extraHosts,
		DNSSearch: tc.dnsSearch, DNSOptions: tc.dnsOptions, GroupAdd: tc.groupAdd,
		Privileged: tc.privileged, ReadonlyRootfs: tc.readonlyRootfs, SecurityOpt: tc.securityOpt,
		PidMode: container.PidMode(tc.pidMode), IpcMode: container.IpcMode(tc.ipcMode),
		UTSMode: container.UTSMode(tc.utsMode), UsernsMode: container.UsernsMode(tc.usernsMode),
		ShmSize: tc.shmSize, Sysctls: tc.sysctl,
	}
	if tc.init {
		hc.Init = &tc.init
	}
	for _, s := range tc.dnsServers {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return client.ContainerCreateOptions{}, fmt.Errorf("dns_servers: %q is not an IP address", s)
		}
		hc.DNS = append(hc.DNS, a)
	}
	hc.LogConfig = container.LogConfig{Type: tc.logType, Config: tc.logConfig}
	if hc.LogConfig.Type == "" {
		hc.LogConfig.Type = defaultLogType
		if len(hc.LogConfig.Config) == 0 {
			hc.LogConfig.Config = defaultLogConfig
		}
	}
	if err := d.setResources(hc, cfg, tc, cores); err != nil {
		return client.ContainerCreateOptions{}, err
	}
	if err := d.setMounts(hc, cfg, tc); err != nil {
		return client.ContainerCreateOptions{}, err
	}
	if err := setPorts(cc, hc, cfg, tc); err != nil {
		return client.ContainerCreateOptions{}, err
	}
	return client.ContainerCreateOptions{Config: cc, HostConfig: hc, Name: containerName(cfg)}, nil
}

// setResources enforces the task's resources: CPU MHz as shares, cores as
// a cpuset, memory (memory_max as the limit with memory as the
// reservation, as Nomad), no swap beyond the limit, pids and ulimits.
func (d *Driver) setResources(hc *container.HostConfig, cfg *driver.TaskConfig, tc *taskConfig, cores []int) error {
	if r := cfg.Resources; r != nil {
		hc.CPUShares = max(r.Cpu.CpuShares, 2) // the kernel's minimum
		mem := r.Memory.MemoryMB
		if r.Memory.MemoryMaxMB > mem {
			hc.MemoryReservation = mem << 20
			mem = r.Memory.MemoryMaxMB
		}
		if mem > 0 {
			hc.Memory = mem << 20
			hc.MemorySwap = hc.Memory
		}
	}
	if len(cores) > 0 {
		hc.CpusetCpus = cpuset(cores)
	}
	pids := tc.pidsLimit
	if lim := d.cfg.PidsLimit; lim > 0 {
		if pids > lim {
			return fmt.Errorf("pids_limit %d is above the client's limit of %d", pids, lim)
		}
		if pids == 0 {
			pids = lim
		}
	}
	if pids > 0 {
		hc.PidsLimit = &pids
	}
	names := make([]string, 0, len(tc.ulimit))
	for n := range tc.ulimit {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		soft, hard, err := driverspec.ParseUlimit(tc.ulimit[n])
		if err != nil {
			return fmt.Errorf("ulimit %s: %w", n, err)
		}
		hc.Ulimits = append(hc.Ulimits, &units.Ulimit{Name: n, Soft: soft, Hard: hard})
	}
	return nil
}

// setMounts mounts the allocation directory at /alloc and the task's local
// and secrets directories at /local and /secrets, then the task's volumes
// and mount blocks. Host paths outside the task directory and named
// volumes need volumes { enabled = true }; a relative host path is inside
// the task directory.
func (d *Driver) setMounts(hc *container.HostConfig, cfg *driver.TaskConfig, tc *taskConfig) error {
	hc.Mounts = []mount.Mount{
		{Type: mount.TypeBind, Source: filepath.Join(cfg.AllocDir, allocdir.SharedDirName), Target: driverspec.IsolatedAllocDir},
		{Type: mount.TypeBind, Source: filepath.Join(cfg.TaskDir, allocdir.TaskLocalName), Target: driverspec.IsolatedLocalDir},
		{Type: mount.TypeBind, Source: filepath.Join(cfg.TaskDir, allocdir.TaskSecretName), Target: driverspec.IsolatedSecretsDir},
	}
	for _, v := range tc.volumes {
		parts := strings.Split(v, ":")
		src, err := d.hostPath(cfg, parts[0], "volumes")
		if err != nil {
			return err
		}
		parts[0] = src
		hc.Binds = append(hc.Binds, strings.Join(parts, ":"))
	}
	for i, m := range tc.mounts {
		str := func(k string) string { s, _ := m[k].(string); return s }
		block := func(k string) map[string]any { b, _ := m[k].(map[string]any); return b }
		mt := mount.Mount{Type: mount.Type(str("type")), Target: str("target"), Source: str("source")}
		mt.ReadOnly, _ = m["readonly"].(bool)
		where := fmt.Sprintf("mount[%d]", i)
		switch mt.Type {
		case "", mount.TypeVolume:
			mt.Type = mount.TypeVolume
			if !d.cfg.VolumesEnabled {
				return fmt.Errorf(`%s: docker volumes are disabled on this client (plugin "docker" { config { volumes { enabled = true } } })`, where)
			}
			if vo := block("volume_options"); vo != nil {
				mt.VolumeOptions = &mount.VolumeOptions{}
				mt.VolumeOptions.NoCopy, _ = vo["no_copy"].(bool)
				mt.VolumeOptions.Labels, _ = vo["labels"].(map[string]string)
				if dc, ok := vo["driver_config"].(map[string]any); ok {
					mt.VolumeOptions.DriverConfig = &mount.Driver{}
					mt.VolumeOptions.DriverConfig.Name, _ = dc["name"].(string)
					mt.VolumeOptions.DriverConfig.Options, _ = dc["options"].(map[string]string)
				}
			}
		case mount.TypeBind:
			src, err := d.hostPath(cfg, mt.Source, where+".source")
			if err != nil {
				return err
			}
			mt.Source = src
			if bo := block("bind_options"); bo != nil {
				p, _ := bo["propagation"].(string)
				mt.BindOptions = &mount.BindOptions{Propagation: mount.Propagation(p)}
			}
		case mount.TypeTmpfs:
			if to := block("tmpfs_options"); to != nil {
				mt.TmpfsOptions = &mount.TmpfsOptions{}
				mt.TmpfsOptions.SizeBytes, _ = to["size"].(int64)
				if mode, ok := to["mode"].(int64); ok {
					mt.TmpfsOptions.Mode = os.FileMode(mode)
				}
			}
		}
		hc.Mounts = append(hc.Mounts, mt)
	}
	return nil
}

// hostPath resolves a host path of a volume or bind mount: relative paths
// are inside the task directory (always allowed); absolute ones need
// volumes { enabled = true }.
func (d *Driver) hostPath(cfg *driver.TaskConfig, p, field string) (string, error) {
	if filepath.IsAbs(p) {
		if !d.cfg.VolumesEnabled {
			return "", fmt.Errorf(`%s: host path %q: docker volumes are disabled on this client (plugin "docker" { config { volumes { enabled = true } } })`, field, p)
		}
		return filepath.Clean(p), nil
	}
	if !filepath.IsLocal(p) {
		return "", fmt.Errorf("%s: relative host path %q must stay inside the task directory", field, p)
	}
	return filepath.Join(cfg.TaskDir, p), nil
}

// setPorts publishes the group network's ports the task names: host port
// (the port's value) -> the port's to, or the same port when to is unset,
// on TCP and UDP, bound to the port's host address. With host networking
// nothing is published (the task uses the host's ports directly).
func setPorts(cc *container.Config, hc *container.HostConfig, cfg *driver.TaskConfig, tc *taskConfig) error {
	if len(tc.ports) == 0 {
		return nil
	}
	byLabel := make(map[string]int, len(cfg.Ports))
	for i, p := range cfg.Ports {
		byLabel[p.Label] = i
	}
	if hc.NetworkMode.IsHost() {
		for _, l := range tc.ports {
			if _, ok := byLabel[l]; !ok {
				return fmt.Errorf("ports: port label %q is not in the group's network block", l)
			}
		}
		return nil
	}
	cc.ExposedPorts = network.PortSet{}
	hc.PortBindings = network.PortMap{}
	for _, l := range tc.ports {
		i, ok := byLabel[l]
		if !ok {
			return fmt.Errorf("ports: port label %q is not in the group's network block", l)
		}
		p := cfg.Ports[i]
		to := p.To
		if to <= 0 {
			to = p.Value
		}
		var hostIP netip.Addr
		if p.HostIP != "" {
			if a, err := netip.ParseAddr(p.HostIP); err == nil && !a.IsUnspecified() {
				hostIP = a
			}
		}
		for _, proto := range []string{"tcp", "udp"} {
			cp, err := network.ParsePort(strconv.Itoa(to) + "/" + proto)
			if err != nil {
				return fmt.Errorf("ports: %q: %w", l, err)
			}
			cc.ExposedPorts[cp] = struct{}{}
			hc.PortBindings[cp] = append(hc.PortBindings[cp], network.PortBinding{HostIP: hostIP, HostPort: strconv.Itoa(p.Value)})
		}
	}
	return nil
}

func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
