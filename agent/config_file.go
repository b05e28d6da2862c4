package agent

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/drover-project/drover/agent/client"
	"github.com/drover-project/drover/internal/hcllimit"
	"github.com/drover-project/drover/server"
)

// The file schema. Pointer fields distinguish "not set" from a zero value so
// a later file (or a flag) overrides only what it names. gohcl rejects any
// attribute or block not listed here, with its position.
type fileConfig struct {
	DataDir    *string `hcl:"data_dir,optional"`
	BindAddr   *string `hcl:"bind_addr,optional"`
	Name       *string `hcl:"name,optional"`
	Datacenter *string `hcl:"datacenter,optional"`
	Region     *string `hcl:"region,optional"`
	LogLevel   *string `hcl:"log_level,optional"`
	LogJSON    *bool   `hcl:"log_json,optional"`
	// EnableDebug is Nomad's top-level enable_debug.
	EnableDebug *bool        `hcl:"enable_debug,optional"`
	Ports       *filePorts   `hcl:"ports,block"`
	Server      *fileServer  `hcl:"server,block"`
	Client      *fileClient  `hcl:"client,block"`
	TLS         *fileTLS     `hcl:"tls,block"`
	Plugins     []filePlugin `hcl:"plugin,block"`
	Limits      *fileLimits  `hcl:"limits,block"`
	ACL         *fileACL     `hcl:"acl,block"`
}

// fileACL is Nomad's acl block: enabled and the token expiration bounds;
// Nomad's other settings (token_ttl, policy_ttl, role_ttl,
// replication_token) are errors naming them.
type fileACL struct {
	Enabled       *bool     `hcl:"enabled,optional"`
	TokenMinTTL   *string   `hcl:"token_min_expiration_ttl,optional"`
	TokenMinRange hcl.Range `hcl:"token_min_expiration_ttl,attr_value_range"`
	TokenMaxTTL   *string   `hcl:"token_max_expiration_ttl,optional"`
	TokenMaxRange hcl.Range `hcl:"token_max_expiration_ttl,attr_value_range"`
}

// fileTLS is Nomad's tls block (rpc_upgrade_mode, tls_cipher_suites,
// tls_min_version and tls_prefer_server_cipher_suites are not supported:
// an error names them).
type fileTLS struct {
	HTTP                 *bool   `hcl:"http,optional"`
	RPC                  *bool   `hcl:"rpc,optional"`
	CAFile               *string `hcl:"ca_file,optional"`
	CertFile             *string `hcl:"cert_file,optional"`
	KeyFile              *string `hcl:"key_file,optional"`
	VerifyServerHostname *bool   `hcl:"verify_server_hostname,optional"`
	VerifyHTTPSClient    *bool   `hcl:"verify_https_client,optional"`
	RPCUpgradeMode       *bool   `hcl:"rpc_upgrade_mode,optional"`
}

type filePorts struct {
	HTTP *int `hcl:"http,optional"`
	RPC  *int `hcl:"rpc,optional"`
}

type fileServer struct {
	Enabled         *bool           `hcl:"enabled,optional"`
	BootstrapExpect *int            `hcl:"bootstrap_expect,optional"`
	NumSchedulers   *int            `hcl:"num_schedulers,optional"`
	JobTracked      *int            `hcl:"job_tracked_versions,optional"`
	ServerJoin      *fileServerJoin `hcl:"server_join,block"`

	HeartbeatGrace      *string   `hcl:"heartbeat_grace,optional"`
	HeartbeatGraceRange hcl.Range `hcl:"heartbeat_grace,attr_value_range"`
	MinHeartbeatTTL     *string   `hcl:"min_heartbeat_ttl,optional"`
	MinHeartbeatTTLRng  hcl.Range `hcl:"min_heartbeat_ttl,attr_value_range"`
	FailoverTTL         *string   `hcl:"failover_heartbeat_ttl,optional"`
	FailoverTTLRange    hcl.Range `hcl:"failover_heartbeat_ttl,attr_value_range"`

	JobGCInterval              *string   `hcl:"job_gc_interval,optional"`
	JobGCIntervalRange         hcl.Range `hcl:"job_gc_interval,attr_value_range"`
	EvalGCThreshold            *string   `hcl:"eval_gc_threshold,optional"`
	EvalGCThresholdRange       hcl.Range `hcl:"eval_gc_threshold,attr_value_range"`
	JobGCThreshold             *string   `hcl:"job_gc_threshold,optional"`
	JobGCThresholdRange        hcl.Range `hcl:"job_gc_threshold,attr_value_range"`
	NodeGCThreshold            *string   `hcl:"node_gc_threshold,optional"`
	NodeGCThresholdRange       hcl.Range `hcl:"node_gc_threshold,attr_value_range"`
	DeploymentGCThreshold      *string   `hcl:"deployment_gc_threshold,optional"`
	DeploymentGCThresholdRange hcl.Range `hcl:"deployment_gc_threshold,attr_value_range"`

	AutoscaleInterval      *string                 `hcl:"autoscale_interval,optional"`
	AutoscaleIntervalRange hcl.Range               `hcl:"autoscale_interval,attr_value_range"`
	AutoscaleProviders     []fileAutoscaleProvider `hcl:"autoscale_provider,block"`
	NodeQuarantine         *fileNodeQuarantine     `hcl:"node_quarantine,block"`
}

// fileAutoscaleProvider is server { autoscale_provider "<name>" { ... } }:
// a provider autoscaled node pools may name (Drover's own block).
type fileAutoscaleProvider struct {
	Name         string   `hcl:"name,label"`
	Type         *string  `hcl:"type,optional"`
	Dir          *string  `hcl:"dir,optional"`
	Binary       *string  `hcl:"binary,optional"`
	Servers      []string `hcl:"servers,optional"`
	Quota        *int     `hcl:"quota,optional"`
	ClientConfig *string  `hcl:"client_config,optional"`
}

// fileNodeQuarantine is Drover's server { node_quarantine { ... } } block
// (the flaky-node quarantine; Nomad has none).
type fileNodeQuarantine struct {
	Enabled        *bool     `hcl:"enabled,optional"`
	Threshold      *int      `hcl:"threshold,optional"`
	ThresholdRange hcl.Range `hcl:"threshold,attr_value_range"`
	Window         *string   `hcl:"window,optional"`
	WindowRange    hcl.Range `hcl:"window,attr_value_range"`
	Cooldown       *string   `hcl:"cooldown,optional"`
	CooldownRange  hcl.Range `hcl:"cooldown,attr_value_range"`
}

// apply sets the quarantine settings present in the block.
func (q *fileNodeQuarantine) apply(dst *server.NodeQuarantineConfig) error {
	if q == nil {
		return nil
	}
	if q.Enabled != nil {
		dst.Disabled = !*q.Enabled
	}
	if q.Threshold != nil {
		if *q.Threshold < 1 {
			return fmt.Errorf("%s: threshold: must be at least 1; got %d", posString(q.ThresholdRange), *q.Threshold)
		}
		dst.Threshold = *q.Threshold
	}
	return applyDurations([]durationSetting{
		{"window", q.Window, q.WindowRange, &dst.Window, true},
		{"cooldown", q.Cooldown, q.CooldownRange, &dst.Cooldown, true},
	})
}

type fileServerJoin struct {
	RetryJoin          []string  `hcl:"retry_join,optional"`
	RetryInterval      *string   `hcl:"retry_interval,optional"`
	RetryIntervalRange hcl.Range `hcl:"retry_interval,attr_value_range"`
}

type fileClient struct {
	Enabled             *bool         `hcl:"enabled,optional"`
	Servers             []string      `hcl:"servers,optional"`
	NodeClass           *string       `hcl:"node_class,optional"`
	NodePool            *string       `hcl:"node_pool,optional"`
	Meta                *fileMeta     `hcl:"meta,block"`
	Reserved            *fileReserved `hcl:"reserved,block"`
	CPUTotalCompute     *int          `hcl:"cpu_total_compute,optional"`
	MemoryTotalMB       *int          `hcl:"memory_total_mb,optional"`
	GCInterval          *string       `hcl:"gc_interval,optional"`
	GCIntervalRange     hcl.Range     `hcl:"gc_interval,attr_value_range"`
	GCRetention         *string       `hcl:"gc_retention,optional"`
	GCRetentionRange    hcl.Range     `hcl:"gc_retention,attr_value_range"`
	GCMaxAllocs         *int          `hcl:"gc_max_allocs,optional"`
	GCMaxAllocsRange    hcl.Range     `hcl:"gc_max_allocs,attr_value_range"`
	MaxKillTimeout      *string       `hcl:"max_kill_timeout,optional"`
	MaxKillTimeoutRange hcl.Range     `hcl:"max_kill_timeout,attr_value_range"`
	NetworkInterface    *string       `hcl:"network_interface,optional"`
	MinDynamicPort      *int          `hcl:"min_dynamic_port,optional"`
	MaxDynamicPort      *int          `hcl:"max_dynamic_port,optional"`
	HostNetworks        []fileHostNet `hcl:"host_network,block"`
	// ChrootEnv is chroot_env = { "/host/path" = "/chroot/path" }: an
	// attribute, since HCL2 refuses the quoted names of Nomad's HCL1
	// block form.
	ChrootEnv   *map[string]string `hcl:"chroot_env,optional"`
	HostVolumes []fileHostVol      `hcl:"host_volume,block"`
	Readiness   *fileReadiness     `hcl:"readiness,block"`
}

// fileReadiness is client { readiness { command, args, interval, timeout,
// recheck } }: Drover's own block (Twitter Scoot's ReadyFn).
type fileReadiness struct {
	Command       string    `hcl:"command"`
	CommandRange  hcl.Range `hcl:"command,attr_value_range"`
	Args          []string  `hcl:"args,optional"`
	Interval      *string   `hcl:"interval,optional"`
	IntervalRange hcl.Range `hcl:"interval,attr_value_range"`
	Timeout       *string   `hcl:"timeout,optional"`
	TimeoutRange  hcl.Range `hcl:"timeout,attr_value_range"`
	Recheck       *bool     `hcl:"recheck,optional"`
}

// apply puts the block on c, over what earlier files set.
func (r *fileReadiness) apply(c *ClientConfig) error {
	if strings.TrimSpace(r.Command) == "" {
		return fmt.Errorf("%s: readiness.command: must name the command to run", posString(r.CommandRange))
	}
	if c.Readiness == nil {
		c.Readiness = &client.ReadinessConfig{Interval: client.DefaultReadinessInterval, Timeout: client.DefaultReadinessTimeout}
	}
	c.Readiness.Command = r.Command
	if r.Args != nil {
		c.Readiness.Args = r.Args
	}
	if r.Recheck != nil {
		c.Readiness.Recheck = *r.Recheck
	}
	return applyDurations([]durationSetting{
		{"readiness.interval", r.Interval, r.IntervalRange, &c.Readiness.Interval, true},
		{"readiness.timeout", r.Timeout, r.TimeoutRange, &c.Readiness.Timeout, true},
	})
}

// fileHostVol is client { host_volume "<name>" { path, read_only } }.
type fileHostVol struct {
	Name     string `hcl:"name,label"`
	Path     string `hcl:"path"`
	ReadOnly *bool  `hcl:"read_only,optional"`
}

// fileHostNet is client { host_network "<name>" { ... } }.
type fileHostNet struct {
	Name          string  `hcl:"name,label"`
	CIDR          *string `hcl:"cidr,optional"`
	Interface     *string `hcl:"interface,optional"`
	ReservedPorts *string `hcl:"reserved_ports,optional"`
}

// fileReserved is client { reserved { cpu memory disk } } (MHz, MB, MB).
type fileReserved struct {
	CPU           *int    `hcl:"cpu,optional"`
	MemoryMB      *int    `hcl:"memory,optional"`
	DiskMB        *int    `hcl:"disk,optional"`
	ReservedPorts *string `hcl:"reserved_ports,optional"`
}

// fileMeta is a block of arbitrary string attributes.
type fileMeta struct {
	Attrs hcl.Attributes `hcl:",remain"`
}

type filePlugin struct {
	Name      string            `hcl:"name,label"`
	NameRange hcl.Range         `hcl:"name,label_range"`
	Config    *filePluginConfig `hcl:"config,block"`
}

type filePluginConfig struct {
	Enabled *bool `hcl:"enabled,optional"`
	// Rest holds the other keys: the docker plugin's (config_docker.go);
	// any other plugin refuses them.
	Rest hcl.Body `hcl:",remain"`
}

// LoadConfigFile reads one HCL (or, for a .json name, JSON) config file, or
// every .hcl and .json file in a directory in name order, and applies what
// it sets onto c. Errors name file:line:column.
func LoadConfigFile(c *Config, path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if !info.IsDir() {
		return loadOneFile(c, path)
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		if ext := filepath.Ext(e.Name()); ext == ".hcl" || ext == ".json" {
			names = append(names, filepath.Join(path, e.Name()))
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if err := loadOneFile(c, n); err != nil {
			return err
		}
	}
	return nil
}

func loadOneFile(c *Config, path string) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return parseConfig(c, path, src)
}

// parseConfig decodes src (named filename in messages) and applies it to c.
func parseConfig(c *Config, filename string, src []byte) error {
	if diags := boundConfigSource(filename, src); diags.HasErrors() {
		return diagError(diags)
	}
	p := hclparse.NewParser()
	var f *hcl.File
	var diags hcl.Diagnostics
	if strings.HasSuffix(filename, ".json") {
		f, diags = p.ParseJSON(src, filename)
	} else {
		f, diags = p.ParseHCL(src, filename)
	}
	if diags.HasErrors() {
		return diagError(diags)
	}
	var fc fileConfig
	if diags := gohcl.DecodeBody(f.Body, nil, &fc); diags.HasErrors() {
		return diagError(diags)
	}
	if err := fc.apply(c); err != nil {
		return err
	}
	c.Files = append(c.Files, filename)
	return nil
}

func (fc *fileConfig) apply(c *Config) error {
	setString(&c.DataDir, fc.DataDir)
	setString(&c.BindAddr, fc.BindAddr)
	setString(&c.NodeName, fc.Name)
	setString(&c.Datacenter, fc.Datacenter)
	setString(&c.Region, fc.Region)
	setString(&c.LogLevel, fc.LogLevel)
	setBool(&c.LogJSON, fc.LogJSON)
	setBool(&c.EnableDebug, fc.EnableDebug)
	if err := fc.Limits.apply(&c.Limits); err != nil {
		return err
	}
	if a := fc.ACL; a != nil {
		setBool(&c.ACL.Enabled, a.Enabled)
		if err := applyDurations([]durationSetting{
			{"token_min_expiration_ttl", a.TokenMinTTL, a.TokenMinRange, &c.ACL.TokenMinExpirationTTL, true},
			{"token_max_expiration_ttl", a.TokenMaxTTL, a.TokenMaxRange, &c.ACL.TokenMaxExpirationTTL, true},
		}); err != nil {
			return err
		}
	}
	if p := fc.Ports; p != nil {
		setInt(&c.Ports.HTTP, p.HTTP)
		setInt(&c.Ports.RPC, p.RPC)
	}
	if s := fc.Server; s != nil {
		setBool(&c.Server.Enabled, s.Enabled)
		setInt(&c.Server.BootstrapExpect, s.BootstrapExpect)
		setInt(&c.Server.NumSchedulers, s.NumSchedulers)
		setInt(&c.Server.JobTrackedVersions, s.JobTracked)
		if err := applyDurations([]durationSetting{
			{"heartbeat_grace", s.HeartbeatGrace, s.HeartbeatGraceRange, &c.Server.HeartbeatGrace, true},
			{"min_heartbeat_ttl", s.MinHeartbeatTTL, s.MinHeartbeatTTLRng, &c.Server.MinHeartbeatTTL, true},
			{"failover_heartbeat_ttl", s.FailoverTTL, s.FailoverTTLRange, &c.Server.FailoverHeartbeatTTL, true},
			{"job_gc_interval", s.JobGCInterval, s.JobGCIntervalRange, &c.Server.JobGCInterval, true},
			{"eval_gc_threshold", s.EvalGCThreshold, s.EvalGCThresholdRange, &c.Server.EvalGCThreshold, true},
			{"job_gc_threshold", s.JobGCThreshold, s.JobGCThresholdRange, &c.Server.JobGCThreshold, true},
			{"node_gc_threshold", s.NodeGCThreshold, s.NodeGCThresholdRange, &c.Server.NodeGCThreshold, true},
			{"deployment_gc_threshold", s.DeploymentGCThreshold, s.DeploymentGCThresholdRange, &c.Server.DeploymentGCThreshold, true},
			{"autoscale_interval", s.AutoscaleInterval, s.AutoscaleIntervalRange, &c.Server.AutoscaleInterval, true},
		}); err != nil {
			return err
		}
		if err := s.NodeQuarantine.apply(&c.Server.NodeQuarantine); err != nil {
			return err
		}
		for _, p := range s.AutoscaleProviders {
			ap := AutoscaleProviderConfig{Name: p.Name, Type: p.Name, Servers: p.Servers}
			setString(&ap.Type, p.Type)
			setString(&ap.Dir, p.Dir)
			setString(&ap.Binary, p.Binary)
			setInt(&ap.Quota, p.Quota)
			setString(&ap.ClientConfig, p.ClientConfig)
			c.Server.AutoscaleProviders = append(c.Server.AutoscaleProviders, ap)
		}
		if j := s.ServerJoin; j != nil {
			if j.RetryJoin != nil {
				c.Server.RetryJoin = j.RetryJoin
			}
			if j.RetryInterval != nil {
				d, err := time.ParseDuration(*j.RetryInterval)
				if err != nil {
					return fmt.Errorf("%s: retry_interval: %v", posString(j.RetryIntervalRange), err)
				}
				c.Server.RetryInterval = d
			}
		}
	}
	if cl := fc.Client; cl != nil {
		setBool(&c.Client.Enabled, cl.Enabled)
		if cl.Servers != nil {
			c.Client.Servers = cl.Servers
		}
		setString(&c.Client.NodeClass, cl.NodeClass)
		setString(&c.Client.NodePool, cl.NodePool)
		if r := cl.Reserved; r != nil {
			if c.Client.Reserved == nil {
				c.Client.Reserved = &ReservedConfig{}
			}
			setInt(&c.Client.Reserved.CPU, r.CPU)
			setInt(&c.Client.Reserved.MemoryMB, r.MemoryMB)
			setInt(&c.Client.Reserved.DiskMB, r.DiskMB)
			setString(&c.Client.Reserved.ReservedPorts, r.ReservedPorts)
		}
		setInt(&c.Client.CPUTotalCompute, cl.CPUTotalCompute)
		setInt(&c.Client.MemoryTotalMB, cl.MemoryTotalMB)
		setString(&c.Client.NetworkInterface, cl.NetworkInterface)
		setInt(&c.Client.MinDynamicPort, cl.MinDynamicPort)
		setInt(&c.Client.MaxDynamicPort, cl.MaxDynamicPort)
		for _, hn := range cl.HostNetworks {
			h := HostNetworkConfig{Name: hn.Name}
			setString(&h.CIDR, hn.CIDR)
			setString(&h.Interface, hn.Interface)
			setString(&h.ReservedPorts, hn.ReservedPorts)
			c.Client.HostNetworks = append(c.Client.HostNetworks, h)
		}
		for _, hv := range cl.HostVolumes {
			v := HostVolumeConfig{Name: hv.Name, Path: hv.Path}
			if hv.ReadOnly != nil {
				v.ReadOnly = *hv.ReadOnly
			}
			c.Client.HostVolumes = append(c.Client.HostVolumes, v)
		}
		if n := cl.GCMaxAllocs; n != nil && *n <= 0 {
			return fmt.Errorf("%s: gc_max_allocs: must be positive; got %d", posString(cl.GCMaxAllocsRange), *n)
		}
		setInt(&c.Client.GCMaxAllocs, cl.GCMaxAllocs)
		if err := applyDurations([]durationSetting{
			{"gc_interval", cl.GCInterval, cl.GCIntervalRange, &c.Client.GCInterval, true},
			{"gc_retention", cl.GCRetention, cl.GCRetentionRange, &c.Client.GCRetention, true},
			// 0 means no cap; Validate rejects a negative one.
			{"max_kill_timeout", cl.MaxKillTimeout, cl.MaxKillTimeoutRange, &c.Client.MaxKillTimeout, false},
		}); err != nil {
			return err
		}
		if cl.ChrootEnv != nil {
			c.Client.ChrootEnv = maps.Clone(*cl.ChrootEnv)
		}
		if r := cl.Readiness; r != nil {
			if err := r.apply(&c.Client); err != nil {
				return err
			}
		}
		if cl.Meta != nil {
			if c.Client.Meta == nil {
				c.Client.Meta = map[string]string{}
			}
			for _, name := range slices.Sorted(maps.Keys(cl.Meta.Attrs)) { // the first error in name order
				attr := cl.Meta.Attrs[name]
				var v string
				if diags := gohcl.DecodeExpression(attr.Expr, nil, &v); diags.HasErrors() {
					return diagError(diags)
				}
				c.Client.Meta[name] = v
			}
		}
	}
	if t := fc.TLS; t != nil {
		setBool(&c.TLS.EnableHTTP, t.HTTP)
		setBool(&c.TLS.EnableRPC, t.RPC)
		setString(&c.TLS.CAFile, t.CAFile)
		setString(&c.TLS.CertFile, t.CertFile)
		setString(&c.TLS.KeyFile, t.KeyFile)
		setBool(&c.TLS.VerifyServerHostname, t.VerifyServerHostname)
		setBool(&c.TLS.VerifyHTTPSClient, t.VerifyHTTPSClient)
		setBool(&c.TLS.RPCUpgradeMode, t.RPCUpgradeMode)
	}
	for _, p := range fc.Plugins {
		if !knownPlugins[p.Name] {
			return fmt.Errorf("%s: plugin %q is not supported (Drover has raw_exec, exec, docker and mock_driver)", posString(p.NameRange), p.Name)
		}
		pc := c.Plugins[p.Name]
		if pc == nil {
			pc = &PluginConfig{}
			if c.Plugins == nil {
				c.Plugins = map[string]*PluginConfig{}
			}
			c.Plugins[p.Name] = pc
		}
		if p.Config != nil {
			setBool(&pc.Enabled, p.Config.Enabled)
			if err := applyPluginRest(pc, p.Name, p.Config); err != nil {
				return err
			}
		}
	}
	return nil
}

// boundConfigSource refuses a file that would drive hcl's recursive
// parser too deep (internal/hcllimit): nesting, operator chains, size.
func boundConfigSource(filename string, src []byte) hcl.Diagnostics {
	if strings.HasSuffix(filename, ".json") {
		return hcllimit.JSON(filename, src)
	}
	return hcllimit.HCL(filename, src)
}

// durationSetting is one duration attribute of a block: its text as
// written (nil when absent), where the value is, and where it goes.
type durationSetting struct {
	name     string
	val      *string
	rng      hcl.Range
	dst      *time.Duration
	positive bool // zero and negative durations are errors
}

// applyDurations parses each present setting as a Go duration ("90s",
// "5m", "4h") into its destination. An error names the setting and the
// file:line:col of its value.
func applyDurations(settings []durationSetting) error {
	for _, d := range settings {
		if d.val == nil {
			continue
		}
		v, err := time.ParseDuration(*d.val)
		switch {
		case d.positive && (err != nil || v <= 0):
			return fmt.Errorf("%s: %s: must be a positive duration such as \"10s\"; got %q", posString(d.rng), d.name, *d.val)
		case err != nil:
			return fmt.Errorf("%s: %s: %v", posString(d.rng), d.name, err)
		}
		*d.dst = v
	}
	return nil
}

// diagError renders HCL diagnostics as "file:line:col: summary; detail",
// one per line, in file order (gohcl reports unknown arguments in map
// order).
func diagError(diags hcl.Diagnostics) error {
	diags = slices.Clone(diags)
	sort.SliceStable(diags, func(i, j int) bool {
		a, b := diags[i].Subject, diags[j].Subject
		switch {
		case a == nil || b == nil:
			return a == nil && b != nil
		case a.Filename != b.Filename:
			return a.Filename < b.Filename
		}
		return a.Start.Byte < b.Start.Byte
	})
	var lines []string
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += "; " + d.Detail
		}
		if d.Subject != nil {
			msg = posString(*d.Subject) + ": " + msg
		}
		lines = append(lines, msg)
	}
	return fmt.Errorf("%s", strings.Join(lines, "\n"))
}

func posString(r hcl.Range) string {
	return fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column)
}

func setString(dst *string, src *string) {
	if src != nil {
		*dst = *src
	}
}

func setBool(dst *bool, src *bool) {
	if src != nil {
		*dst = *src
	}
}

func setInt(dst *int, src *int) {
	if src != nil {
		*dst = *src
	}
}
