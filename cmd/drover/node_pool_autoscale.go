package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/drover-project/drover/structs"
)

func nodePoolAutoscaleCommands() []*command {
	return []*command{
		{name: "node pool autoscaler apply", synopsis: "Set the autoscaler of a node pool from a specification file", run: runPoolAutoscalerApply},
		{name: "node pool autoscaler status", synopsis: "Show the autoscaler of a node pool and its events", run: runPoolAutoscalerStatus},
		{name: "node pool autoscaler delete", synopsis: "Delete the autoscaler of a node pool (its instances stay)", run: runPoolAutoscalerDelete},
		{name: "node pool instances", synopsis: "List the autoscaled instances of a node pool", run: runPoolInstances},
		{name: "node pool instance hold", synopsis: "Keep an autoscaled instance: never schedule on it, never shut it down", run: poolInstanceBehavior(structs.InstanceBehaviorHold)},
		{name: "node pool instance drain", synopsis: "Drain an autoscaled instance's node, then shut it down", run: poolInstanceBehavior(structs.InstanceBehaviorDrain)},
		{name: "node pool instance run", synopsis: "Return an autoscaled instance to normal: scheduled on, shut down when idle", run: poolInstanceBehavior(structs.InstanceBehaviorRun)},
	}
}

// autoscalerFile is the HCL form of a pool's autoscaler (docs/operations.md).
type autoscalerFile struct {
	Pool                  string             `hcl:"pool,label"`
	Provider              string             `hcl:"provider"`
	Enabled               *bool              `hcl:"enabled,optional"`
	Min                   int                `hcl:"min,optional"`
	Max                   int                `hcl:"max"`
	BootTimeout           string             `hcl:"boot_timeout,optional"`
	IdleTimeout           string             `hcl:"idle_timeout,optional"`
	CreateInterval        string             `hcl:"create_interval,optional"`
	MaxCreatesPerInterval int                `hcl:"max_creates_per_interval,optional"`
	MaxBooting            int                `hcl:"max_booting,optional"`
	QuotaBackoff          string             `hcl:"quota_backoff,optional"`
	ProviderOptions       map[string]string  `hcl:"provider_options,optional"`
	InstanceTypes         []instanceTypeFile `hcl:"instance_type,block"`
}

type instanceTypeFile struct {
	Name         string  `hcl:"name,label"`
	CPU          int     `hcl:"cpu"`
	MemoryMB     int     `hcl:"memory"`
	PricePerHour float64 `hcl:"price_per_hour,optional"`
	ProviderType string  `hcl:"provider_type,optional"`
}

// parseAutoscalerHCL reads one autoscaler "<pool>" block.
func parseAutoscalerHCL(src []byte, path string) (*structs.PoolAutoscaler, error) {
	f, diags := hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	var top struct {
		Autoscalers []autoscalerFile `hcl:"autoscaler,block"`
	}
	if diags := gohcl.DecodeBody(f.Body, nil, &top); diags.HasErrors() {
		return nil, diags
	}
	if len(top.Autoscalers) != 1 {
		return nil, fmt.Errorf(`want exactly one autoscaler "<pool>" block`)
	}
	fa := top.Autoscalers[0]
	a := &structs.PoolAutoscaler{Pool: fa.Pool, Provider: fa.Provider, Enabled: fa.Enabled == nil || *fa.Enabled,
		Min: fa.Min, Max: fa.Max, MaxCreatesPerInterval: fa.MaxCreatesPerInterval, MaxBooting: fa.MaxBooting,
		ProviderOptions: fa.ProviderOptions}
	for _, d := range []struct {
		name string
		in   string
		out  *time.Duration
	}{{"boot_timeout", fa.BootTimeout, &a.BootTimeout}, {"idle_timeout", fa.IdleTimeout, &a.IdleTimeout},
		{"create_interval", fa.CreateInterval, &a.CreateInterval}, {"quota_backoff", fa.QuotaBackoff, &a.QuotaBackoff}} {
		if d.in == "" {
			continue
		}
		v, err := time.ParseDuration(d.in)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", d.name, err)
		}
		*d.out = v
	}
	for _, t := range fa.InstanceTypes {
		a.InstanceTypes = append(a.InstanceTypes, &structs.InstanceType{Name: t.Name, CPU: t.CPU, MemoryMB: t.MemoryMB,
			PricePerHour: t.PricePerHour, ProviderType: t.ProviderType})
	}
	return a, nil
}

func runPoolAutoscalerApply(e *env, args []string) int {
	var af apiFlags
	var asJSON bool
	fs := newFlagSet(e, "node pool autoscaler apply", "[options] <file>",
		`Set the autoscaler of the node pool a file names: HCL (autoscaler "<pool>" { provider = "local" max = 3 instance_type "small" { cpu = 1000 memory = 1024 price_per_hour = 0.1 } }) or, with -json, the JSON of GET /v1/node/pool/<pool>/autoscaler's Autoscaler. "-" reads standard input.`)
	af.register(fs, e)
	fs.BoolVar(&asJSON, "json", false, "the file is JSON")
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usagef(e, "give one autoscaler specification file")
	}
	path := fs.Arg(0)
	src, err := readFileOrStdin(e, path)
	if err != nil {
		return errorf(e, "reading %s: %v", path, err)
	}
	var a *structs.PoolAutoscaler
	if asJSON {
		a = new(structs.PoolAutoscaler)
		dec := json.NewDecoder(strings.NewReader(string(src)))
		dec.DisallowUnknownFields()
		err = dec.Decode(a)
	} else {
		a, err = parseAutoscalerHCL(src, path)
	}
	if err != nil {
		return errorf(e, "parsing %s: %v", path, err)
	}
	if _, err := af.client().SetPoolAutoscaler(context.Background(), a, nil); err != nil {
		return errorf(e, "applying autoscaler: %v", err)
	}
	fmt.Fprintf(e.stdout, "Successfully applied the autoscaler of node pool %q!\n", a.Pool)
	return exitOK
}

func runPoolAutoscalerStatus(e *env, args []string) int {
	var af apiFlags
	var asJSON bool
	fs := newFlagSet(e, "node pool autoscaler status", "[options] <pool>", "Show a node pool's autoscaler, its instances by state and its events, newest first.")
	af.register(fs, e)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usagef(e, "give one node pool")
	}
	c := af.client()
	info, _, err := c.PoolAutoscaler(context.Background(), fs.Arg(0), nil)
	if err != nil {
		return errorf(e, "retrieving autoscaler: %v", err)
	}
	if asJSON {
		return printJSON(e, info)
	}
	if a := info.Autoscaler; a != nil {
		kv(e.stdout, "Node Pool", a.Pool, "Provider", a.Provider, "Enabled", fmt.Sprint(a.Enabled),
			"Min / Max", fmt.Sprintf("%d / %d", a.Min, a.Max), "Boot Timeout", a.BootTimeout.String(),
			"Idle Timeout", a.IdleTimeout.String(), "Create Throttle", throttle(a), "Quota Back-off", a.QuotaBackoff.String())
		fmt.Fprintln(e.stdout)
		fmt.Fprintln(e.stdout, "Instance Types")
		t := newTable(e.stdout)
		t.row("Name", "CPU (MHz)", "Memory (MB)", "Price/Hour", "Provider Type")
		for _, it := range a.InstanceTypes {
			t.row(it.Name, fmt.Sprint(it.CPU), fmt.Sprint(it.MemoryMB), fmt.Sprintf("%.4g", it.PricePerHour), it.ProviderType)
		}
		t.flush()
	} else {
		fmt.Fprintln(e.stdout, "No autoscaler configured (events of an earlier one follow)")
	}
	if instances, _, err := c.PoolInstances(context.Background(), fs.Arg(0), nil); err == nil {
		counts := map[string]int{}
		price := 0.0
		for _, in := range instances {
			counts[in.State]++
			if !in.Gone() {
				price += in.PricePerHour
			}
		}
		var parts []string
		for _, s := range structs.InstanceStates {
			parts = append(parts, fmt.Sprintf("%s %d", s, counts[s]))
		}
		fmt.Fprintln(e.stdout)
		kv(e.stdout, "Instances", strings.Join(parts, ", "), "Price/Hour", fmt.Sprintf("%.4g", price))
	}
	if s := info.Status; s != nil {
		if s.QuotaBackoffUntil > 0 && time.Unix(0, s.QuotaBackoffUntil).After(time.Now()) {
			kv(e.stdout, "Quota Back-off Until", e.formatUnixNano(s.QuotaBackoffUntil))
		}
		fmt.Fprintln(e.stdout)
		fmt.Fprintln(e.stdout, "Events")
		t := newTable(e.stdout)
		t.row("Time", "Type", "Instance", "Message")
		for _, ev := range s.Events {
			t.row(e.formatUnixNano(ev.Time), ev.Type, shortID(ev.InstanceID, false), ev.Message)
		}
		t.flush()
	}
	return exitOK
}

func throttle(a *structs.PoolAutoscaler) string {
	var parts []string
	if a.MaxCreatesPerInterval > 0 {
		parts = append(parts, fmt.Sprintf("%d per %s", a.MaxCreatesPerInterval, a.CreateInterval))
	}
	if a.MaxBooting > 0 {
		parts = append(parts, fmt.Sprintf("%d booting", a.MaxBooting))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func runPoolAutoscalerDelete(e *env, args []string) int {
	var af apiFlags
	fs := newFlagSet(e, "node pool autoscaler delete", "[options] <pool>", "Delete a node pool's autoscaler; its instances stay and no longer change.")
	af.register(fs, e)
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usagef(e, "give one node pool")
	}
	if _, err := af.client().DeletePoolAutoscaler(context.Background(), fs.Arg(0), nil); err != nil {
		return errorf(e, "deleting autoscaler: %v", err)
	}
	fmt.Fprintf(e.stdout, "Successfully deleted the autoscaler of node pool %q!\n", fs.Arg(0))
	return exitOK
}

func runPoolInstances(e *env, args []string) int {
	var af apiFlags
	var asJSON, verbose bool
	fs := newFlagSet(e, "node pool instances", "[options] <pool>", `List the autoscaled instances of a node pool ("all": of every pool).`)
	af.register(fs, e)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	fs.BoolVar(&verbose, "verbose", false, "show full IDs")
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usagef(e, "give one node pool")
	}
	list, _, err := af.client().PoolInstances(context.Background(), fs.Arg(0), nil)
	if err != nil {
		return errorf(e, "retrieving instances: %v", err)
	}
	if asJSON {
		return printJSON(e, list)
	}
	if len(list) == 0 {
		fmt.Fprintln(e.stdout, "No instances")
		return exitOK
	}
	t := newTable(e.stdout)
	t.row("ID", "Pool", "Type", "State", "Behavior", "Node ID", "Price/Hour", "Created", "Reason")
	for _, in := range list {
		t.row(shortID(in.ID, verbose), in.Pool, in.Type, in.State, in.Behavior, orNone(shortID(in.NodeID, verbose)),
			fmt.Sprintf("%.4g", in.PricePerHour), e.agoUnixNano(in.CreateTime), in.StateReason)
	}
	t.flush()
	return exitOK
}

// poolInstanceBehavior returns the run function of `node pool instance
// <behavior> <id>`: the ID or a unique prefix of it.
func poolInstanceBehavior(behavior string) func(e *env, args []string) int {
	return func(e *env, args []string) int {
		var af apiFlags
		fs := newFlagSet(e, "node pool instance "+behavior, "[options] <instance>", "Set an autoscaled instance's behaviour to "+behavior+".")
		af.register(fs, e)
		if code, ok := parseFlags(fs, args, 1); !ok {
			return code
		}
		if fs.NArg() != 1 {
			return usagef(e, "give one instance ID")
		}
		c := af.client()
		list, _, err := c.PoolInstances(context.Background(), structs.NodePoolAll, nil)
		if err != nil {
			return errorf(e, "retrieving instances: %v", err)
		}
		var match []string
		for _, in := range list {
			if in.ID == fs.Arg(0) {
				match = []string{in.ID}
				break
			}
			if strings.HasPrefix(in.ID, fs.Arg(0)) {
				match = append(match, in.ID)
			}
		}
		sort.Strings(match)
		switch len(match) {
		case 0:
			return errorf(e, "no instance with ID prefix %q", fs.Arg(0))
		case 1:
		default:
			return errorf(e, "instance ID prefix %q matches %d instances: %s", fs.Arg(0), len(match), strings.Join(match, ", "))
		}
		if _, err := c.SetPoolInstanceBehavior(context.Background(), structs.NodePoolAll, match[0], behavior, nil); err != nil {
			return errorf(e, "setting instance behaviour: %v", err)
		}
		fmt.Fprintf(e.stdout, "Instance %q set to %s\n", match[0], behavior)
		return exitOK
	}
}
