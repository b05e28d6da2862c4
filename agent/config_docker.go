package agent

import (
	"fmt"
	"slices"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/drover-project/drover/agent/client/driver/docker"
)

// fileDockerConfig is the docker plugin's config block, with Nomad's key
// names: plugin "docker" { config { endpoint, allow_privileged,
// pids_limit, volumes { enabled }, gc { image, image_delay, container } } }.
// Nomad's other keys are refused by name.
type fileDockerConfig struct {
	Endpoint        *string            `hcl:"endpoint,optional"`
	AllowPrivileged *bool              `hcl:"allow_privileged,optional"`
	PidsLimit       *int64             `hcl:"pids_limit,optional"`
	Volumes         *fileDockerVolumes `hcl:"volumes,block"`
	GC              *fileDockerGC      `hcl:"gc,block"`
	Rest            hcl.Body           `hcl:",remain"`
}

type fileDockerVolumes struct {
	Enabled *bool    `hcl:"enabled,optional"`
	Rest    hcl.Body `hcl:",remain"`
}

type fileDockerGC struct {
	Image           *bool     `hcl:"image,optional"`
	ImageDelay      *string   `hcl:"image_delay,optional"`
	ImageDelayRange hcl.Range `hcl:"image_delay,attr_value_range"`
	Container       *bool     `hcl:"container,optional"`
	Rest            hcl.Body  `hcl:",remain"`
}

// applyPluginRest applies a plugin config block's keys other than
// enabled: the docker plugin's settings; any key elsewhere is an error.
func applyPluginRest(pc *PluginConfig, name string, fc *filePluginConfig) error {
	if name == PluginExec {
		return applyExecOptions(pc, fc)
	}
	if name != PluginDocker {
		return refuseKeys(fc.Rest, func(k string) string {
			return fmt.Sprintf("Unsupported argument; plugin %q has no argument %q", name, k)
		})
	}
	if fc.Enabled != nil {
		return fmt.Errorf("plugin \"docker\": enabled: Drover does not support this setting for docker (as in Nomad, the driver is on while its daemon answers)")
	}
	if fc.Rest == nil {
		return nil
	}
	var dc fileDockerConfig
	if diags := gohcl.DecodeBody(fc.Rest, nil, &dc); diags.HasErrors() {
		return diagError(diags)
	}
	if pc.Docker == nil {
		cfg := docker.DefaultConfig()
		pc.Docker = &cfg
	}
	d := pc.Docker
	setString(&d.Endpoint, dc.Endpoint)
	setBool(&d.AllowPrivileged, dc.AllowPrivileged)
	if dc.PidsLimit != nil {
		if *dc.PidsLimit < 0 {
			return fmt.Errorf("plugin \"docker\": pids_limit: must not be negative; got %d", *dc.PidsLimit)
		}
		d.PidsLimit = *dc.PidsLimit
	}
	if v := dc.Volumes; v != nil {
		setBool(&d.VolumesEnabled, v.Enabled)
		if err := refuseKeys(v.Rest, dockerRefusal("volumes.")); err != nil {
			return err
		}
	}
	if g := dc.GC; g != nil {
		setBool(&d.GC.Image, g.Image)
		setBool(&d.GC.Container, g.Container)
		if err := applyDurations([]durationSetting{
			{"image_delay", g.ImageDelay, g.ImageDelayRange, &d.GC.ImageDelay, true},
		}); err != nil {
			return err
		}
		if err := refuseKeys(g.Rest, dockerRefusal("gc.")); err != nil {
			return err
		}
	}
	return refuseKeys(dc.Rest, dockerRefusal(""), "volumes", "gc")
}

func dockerRefusal(prefix string) func(string) string {
	return func(k string) string {
		return fmt.Sprintf("plugin \"docker\": %s%s: Drover does not support this docker plugin setting", prefix, k)
	}
}

// refuseKeys returns an error for the first key (attribute or block, in
// file order) left in body (a gohcl remain body: its decoded attributes
// are hidden; decoded names the block types that were decoded), worded by
// msg.
func refuseKeys(body hcl.Body, msg func(string) string, decoded ...string) error {
	if body == nil {
		return nil
	}
	type key struct {
		name string
		rng  hcl.Range
	}
	var keys []key
	attrs, _ := body.JustAttributes() // the diagnostics are about blocks
	for n, a := range attrs {
		keys = append(keys, key{n, a.NameRange})
	}
	if sb, ok := body.(*hclsyntax.Body); ok {
		for _, b := range sb.Blocks {
			if !slices.Contains(decoded, b.Type) {
				keys = append(keys, key{b.Type, b.TypeRange})
			}
		}
	}
	if len(keys) == 0 {
		return nil
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].rng.Start.Byte < keys[j].rng.Start.Byte })
	return fmt.Errorf("%s: %s", posString(keys[0].rng), msg(keys[0].name))
}

// dockerConfig is the client's docker driver config: the plugin block's,
// or Nomad's defaults.
func (c *Config) dockerConfig() *docker.Config {
	if p := c.Plugins[PluginDocker]; p != nil && p.Docker != nil {
		d := *p.Docker
		return &d
	}
	d := docker.DefaultConfig()
	return &d
}

// fileExecConfig is the exec plugin's config block: Nomad's no_pivot_root,
// default_pid_mode, default_ipc_mode and allow_caps, and Drover's
// pids_limit.
type fileExecConfig struct {
	NoPivotRoot    *bool     `hcl:"no_pivot_root,optional"`
	DefaultPidMode *string   `hcl:"default_pid_mode,optional"`
	DefaultIpcMode *string   `hcl:"default_ipc_mode,optional"`
	AllowCaps      *[]string `hcl:"allow_caps,optional"`
	PidsLimit      *int64    `hcl:"pids_limit,optional"`
	Rest           hcl.Body  `hcl:",remain"`
}

// applyExecOptions applies the exec plugin's options; any other key is an
// error naming it.
func applyExecOptions(pc *PluginConfig, fc *filePluginConfig) error {
	if fc.Enabled != nil {
		return fmt.Errorf("Unsupported argument; plugin %q has no argument \"enabled\" (the driver is on wherever it can run)", PluginExec)
	}
	if fc.Rest == nil {
		return nil
	}
	var ec fileExecConfig
	if diags := gohcl.DecodeBody(fc.Rest, nil, &ec); diags.HasErrors() {
		return diagError(diags)
	}
	if err := refuseKeys(ec.Rest, func(k string) string {
		return fmt.Sprintf("Unsupported argument; plugin %q has no argument %q (it takes no_pivot_root, default_pid_mode, default_ipc_mode, allow_caps, pids_limit)", PluginExec, k)
	}); err != nil {
		return err
	}
	setBool(&pc.NoPivotRoot, ec.NoPivotRoot)
	setString(&pc.DefaultPidMode, ec.DefaultPidMode)
	setString(&pc.DefaultIpcMode, ec.DefaultIpcMode)
	if ec.AllowCaps != nil {
		pc.AllowCaps = append([]string{}, (*ec.AllowCaps)...)
	}
	if ec.PidsLimit != nil {
		pc.PidsLimit = *ec.PidsLimit
	}
	return nil
}
