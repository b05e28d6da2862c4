package jobspec

import (
	"strings"
	"time"

	"github.com/drover-project/drover/structs"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// decoder turns the blocks of one file into a job, collecting every
// problem in diags.
type decoder struct {
	ev    *evaluator
	diags hcl.Diagnostics
}

var (
	jobSpec = &bodySpec{what: "job",
		attrs:  []string{"name", "type", "priority", "datacenters", "node_pool", "region", "namespace", "all_at_once", "meta"},
		blocks: []string{"group", "task", "constraint", "affinity", "spread", "meta", "reschedule", "migrate", "update", "periodic", "parameterized"}}
	groupSpec = &bodySpec{what: "group",
		attrs: []string{"count", "meta", "max_client_disconnect", "stop_after_client_disconnect", "shutdown_delay"},
		blocks: []string{"task", "constraint", "affinity", "spread", "restart", "reschedule", "migrate", "update", "meta", "service", "network", "scaling", "disconnect",
			"volume", "ephemeral_disk"}}
	disconnectSpec = &bodySpec{what: "disconnect", attrs: []string{"lost_after", "stop_on_client_after", "replace", "reconcile"}}
	taskSpec       = &bodySpec{what: "task",
		attrs: []string{"driver", "user", "kill_timeout", "kill_signal", "leader", "config", "env", "meta", "shutdown_delay"},
		blocks: []string{"config", "env", "meta", "resources", "constraint", "affinity", "identity", "service", "template", "dispatch_payload", "lifecycle", "artifact",
			"restart", "logs", "volume_mount"}}
	logsSpec          = &bodySpec{what: "logs", attrs: []string{"max_files", "max_file_size", "disabled"}}
	volumeSpec        = &bodySpec{what: "volume", attrs: []string{"type", "source", "read_only"}}
	volumeMountSpec   = &bodySpec{what: "volume_mount", attrs: []string{"volume", "destination", "read_only", "propagation_mode"}}
	ephemeralDiskSpec = &bodySpec{what: "ephemeral_disk", attrs: []string{"size", "sticky", "migrate"}}
	identitySpec      = &bodySpec{what: "identity", attrs: []string{"name", "env", "file"}}
	templateSpec      = &bodySpec{what: "template",
		attrs: []string{"data", "source", "destination", "env", "change_mode", "change_signal", "splay",
			"perms", "uid", "gid", "left_delimiter", "right_delimiter", "error_on_missing_key"},
		blocks: []string{"change_script", "wait"}}
	artifactSpec = &bodySpec{what: "artifact",
		attrs:  []string{"source", "destination", "mode", "options", "headers", "insecure", "chown"},
		blocks: []string{"options", "headers"}}
	changeScriptSpec = &bodySpec{what: "change_script", attrs: []string{"command", "args", "timeout", "fail_on_error"}}
	waitSpec         = &bodySpec{what: "wait", attrs: []string{"min", "max"}}
	resourcesSpec    = &bodySpec{what: "resources", attrs: []string{"cpu", "memory", "memory_max", "cores", "disk"},
		blocks: []string{"network"}}
	networkSpec = &bodySpec{what: "network", attrs: []string{"mode", "mbits", "hostname"},
		blocks: []string{"port", "dns"}}
	portSpec       = &bodySpec{what: "port", attrs: []string{"static", "to", "host_network"}}
	dnsSpec        = &bodySpec{what: "dns", attrs: []string{"servers", "searches", "options"}}
	constraintSpec = &bodySpec{what: "constraint", attrs: []string{"attribute", "operator", "value",
		"distinct_hosts", "distinct_property", "regexp", "version", "semver",
		"set_contains", "set_contains_all", "set_contains_any"}}
	affinitySpec = &bodySpec{what: "affinity", attrs: []string{"attribute", "operator", "value", "weight",
		"regexp", "version", "semver", "set_contains", "set_contains_all", "set_contains_any"}}
	spreadSpec       = &bodySpec{what: "spread", attrs: []string{"attribute", "weight"}, blocks: []string{"target"}}
	spreadTargetSpec = &bodySpec{what: "target", attrs: []string{"percent"}}
	restartSpec      = &bodySpec{what: "restart", attrs: []string{"attempts", "interval", "delay", "mode", "render_templates"}}
	rescheduleSpec   = &bodySpec{what: "reschedule",
		attrs: []string{"attempts", "interval", "delay", "delay_function", "max_delay", "unlimited"}}
	periodicSpec = &bodySpec{what: "periodic",
		attrs: []string{"cron", "crons", "prohibit_overlap", "time_zone", "enabled"}}
	parameterizedSpec = &bodySpec{what: "parameterized",
		attrs: []string{"payload", "meta_required", "meta_optional"}}
	dispatchPayloadSpec = &bodySpec{what: "dispatch_payload", attrs: []string{"file"}}
	lifecycleSpec       = &bodySpec{what: "lifecycle", attrs: []string{"hook", "sidecar"}}
	migrateSpec         = &bodySpec{what: "migrate",
		attrs: []string{"max_parallel", "health_check", "min_healthy_time", "healthy_deadline"}}
	updateSpec = &bodySpec{what: "update",
		attrs: []string{"stagger", "max_parallel", "health_check", "min_healthy_time", "healthy_deadline",
			"progress_deadline", "auto_revert", "auto_promote", "canary"}}
	scalingSpec = &bodySpec{what: "scaling", attrs: []string{"min", "max", "enabled", "type"}, blocks: []string{"policy"}}
)

// job decodes a job block. Blocks that are present (restart, reschedule,
// migrate) are laid over Nomad's defaults for the job type, so a block
// that sets one field keeps sensible values for the others; absent blocks
// stay nil for the server to default.
func (d *decoder) job(blk *hclsyntax.Block) *structs.Job {
	job := &structs.Job{}
	if d.labels(blk, 1, "ID", "example") {
		job.ID = blk.Labels[0]
		job.Name = job.ID
	}
	attrs, blocks := d.content(blk.Body, jobSpec)
	d.str(attrs, "name", &job.Name)
	d.str(attrs, "type", &job.Type)
	d.jobType(attrs, job.Type)
	d.integer(attrs, "priority", &job.Priority)
	d.strList(attrs, "datacenters", &job.Datacenters)
	d.str(attrs, "node_pool", &job.NodePool)
	d.str(attrs, "region", &job.Region)
	d.str(attrs, "namespace", &job.Namespace)
	d.boolean(attrs, "all_at_once", &job.AllAtOnce)
	job.Meta = d.strMap(attrs, blocks, "meta", "job")
	job.Constraints = d.constraints(blocks["constraint"])
	job.Affinities = d.affinities(blocks["affinity"])
	job.Spreads = d.spreads(blocks["spread"])
	if b := d.single(blocks["periodic"], "job"); b != nil {
		job.Periodic = d.periodic(b)
	}
	if b := d.single(blocks["parameterized"], "job"); b != nil {
		job.ParameterizedJob = d.parameterized(b)
	}

	jobType := job.Type
	if jobType == "" {
		jobType = structs.JobTypeService
	}
	var resched *structs.ReschedulePolicy
	if b := d.single(blocks["reschedule"], "job"); b != nil {
		resched = d.reschedule(b, structs.DefaultReschedulePolicy(jobType))
	}
	var migrate *structs.MigrateStrategy
	if b := d.single(blocks["migrate"], "job"); b != nil {
		migrate = d.migrate(b, structs.DefaultMigrateStrategy())
	}
	if b := d.single(blocks["update"], "job"); b != nil {
		job.Update = d.update(b, structs.DefaultUpdateStrategy())
	}
	if len(blocks["group"]) == 0 && len(blocks["task"]) == 0 {
		d.add(diagAt(blk.OpenBraceRange, "Missing group", "a job needs at least one group block"))
	}
	// A task written directly in the job is a group of its own, named
	// after the task, placed before the other groups (as in Nomad).
	for _, tb := range blocks["task"] {
		if t := d.task(tb, structs.DefaultRestartPolicy(jobType)); t != nil {
			tg := &structs.TaskGroup{Name: t.Name, Count: 1, Tasks: []*structs.Task{t},
				ReschedulePolicy: copyResched(resched), Migrate: copyMigrate(migrate), Update: job.Update.Copy()}
			job.TaskGroups = append(job.TaskGroups, tg)
		}
	}
	for _, gb := range blocks["group"] {
		if tg := d.group(gb, jobType, resched, migrate, job.Update); tg != nil {
			job.TaskGroups = append(job.TaskGroups, tg)
		}
	}
	return job
}

// jobTypes are the job types Drover runs: all of Nomad's.
var (
	jobTypes       = []string{structs.JobTypeService, structs.JobTypeBatch, structs.JobTypeSystem, structs.JobTypeSysBatch}
	nomadOnlyTypes []string
)

// jobType refuses a job type Nomad has and Drover does not run; any other
// value is left for the server to validate.
func (d *decoder) jobType(attrs map[string]*hclsyntax.Attribute, typ string) {
	if contains(nomadOnlyTypes, typ) {
		d.add(diagAt(attrs["type"].Expr.Range(), "Unsupported job type",
			"Drover does not support the %q job type; use one of %s", typ, strings.Join(jobTypes, ", ")))
	}
}

// group decodes a group block; jobResched, jobMigrate and jobUpdate are
// the job-level blocks (nil when absent), which the group's own blocks
// refine argument by argument.
func (d *decoder) group(blk *hclsyntax.Block, jobType string, jobResched *structs.ReschedulePolicy, jobMigrate *structs.MigrateStrategy, jobUpdate *structs.UpdateStrategy) *structs.TaskGroup {
	tg := &structs.TaskGroup{Count: 1}
	if d.labels(blk, 1, "name", "web") {
		tg.Name = blk.Labels[0]
	}
	attrs, blocks := d.content(blk.Body, groupSpec)
	d.integer(attrs, "count", &tg.Count)
	tg.Meta = d.strMap(attrs, blocks, "meta", "group")
	tg.Constraints = d.constraints(blocks["constraint"])
	tg.Affinities = d.affinities(blocks["affinity"])
	tg.Spreads = d.spreads(blocks["spread"])
	tg.Services = d.services(blocks["service"])
	if b := d.single(blocks["restart"], "group"); b != nil {
		tg.RestartPolicy = d.restart(b, structs.DefaultRestartPolicy(jobType))
	}

	tg.ReschedulePolicy = copyResched(jobResched)
	if b := d.single(blocks["reschedule"], "group"); b != nil {
		base := tg.ReschedulePolicy
		if base == nil {
			base = structs.DefaultReschedulePolicy(jobType)
		}
		tg.ReschedulePolicy = d.reschedule(b, base)
	}
	tg.Migrate = copyMigrate(jobMigrate)
	if b := d.single(blocks["migrate"], "group"); b != nil {
		base := tg.Migrate
		if base == nil {
			base = structs.DefaultMigrateStrategy()
		}
		tg.Migrate = d.migrate(b, base)
	}

	tg.Update = jobUpdate.Copy()
	if b := d.single(blocks["update"], "group"); b != nil {
		base := tg.Update
		if base == nil {
			base = structs.DefaultUpdateStrategy()
		}
		tg.Update = d.update(b, base)
	}

	tg.Networks = d.networks(blocks["network"])
	tg.MaxClientDisconnect = d.optDuration(attrs, "max_client_disconnect")
	tg.StopAfterClientDisconnect = d.optDuration(attrs, "stop_after_client_disconnect")
	if b := d.single(blocks["disconnect"], "group"); b != nil {
		tg.Disconnect = d.disconnect(b)
	}
	if b := d.single(blocks["scaling"], "group"); b != nil {
		tg.Scaling = d.scaling(b, tg.Count)
	}

	if len(blocks["task"]) == 0 {
		d.add(diagAt(blk.OpenBraceRange, "Missing task", "a group needs at least one task block"))
	}
	if attrs["shutdown_delay"] != nil {
		var delay time.Duration
		d.duration(attrs, "shutdown_delay", &delay)
		tg.ShutdownDelay = &delay
	}
	tg.Volumes = d.volumes(blocks["volume"])
	if b := d.single(blocks["ephemeral_disk"], "group"); b != nil {
		tg.EphemeralDisk = d.ephemeralDisk(b)
	}
	taskRestart := tg.RestartPolicy
	if taskRestart == nil {
		taskRestart = structs.DefaultRestartPolicy(jobType)
	}
	for _, tb := range blocks["task"] {
		if t := d.task(tb, taskRestart); t != nil {
			tg.Tasks = append(tg.Tasks, t)
		}
	}
	return tg
}

func copyResched(p *structs.ReschedulePolicy) *structs.ReschedulePolicy {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

func copyMigrate(m *structs.MigrateStrategy) *structs.MigrateStrategy {
	if m == nil {
		return nil
	}
	c := *m
	return &c
}

// task decodes a task block; groupRestart is the restart policy of its
// group, which the task's own restart block refines (as Nomad's server
// lays a task's restart block over its group's).
func (d *decoder) task(blk *hclsyntax.Block, groupRestart *structs.RestartPolicy) *structs.Task {
	t := &structs.Task{}
	if d.labels(blk, 1, "name", "server") {
		t.Name = blk.Labels[0]
	}
	attrs, blocks := d.content(blk.Body, taskSpec)
	d.str(attrs, "driver", &t.Driver)
	if attrs["driver"] == nil {
		d.add(diagAt(blk.OpenBraceRange, "Missing required argument", `a task needs a driver, such as driver = "raw_exec"`))
	}
	d.str(attrs, "user", &t.User)
	d.duration(attrs, "kill_timeout", &t.KillTimeout)
	d.str(attrs, "kill_signal", &t.KillSignal)
	d.boolean(attrs, "leader", &t.Leader)
	d.duration(attrs, "shutdown_delay", &t.ShutdownDelay)
	if b := d.single(blocks["restart"], "task"); b != nil {
		t.RestartPolicy = d.restart(b, groupRestart)
	}
	if b := d.single(blocks["logs"], "task"); b != nil {
		t.LogConfig = d.logs(b)
	}
	for _, vb := range blocks["volume_mount"] {
		if d.labels(vb, 0, "", "") {
			t.VolumeMounts = append(t.VolumeMounts, d.volumeMount(vb))
		}
	}
	t.Config = d.freeform(attrs, blocks, "config", "task")
	t.Env = d.strMap(attrs, blocks, "env", "task")
	t.Meta = d.strMap(attrs, blocks, "meta", "task")
	t.Constraints = d.constraints(blocks["constraint"])
	t.Affinities = d.affinities(blocks["affinity"])
	t.Services = d.services(blocks["service"])
	if b := d.single(blocks["resources"], "task"); b != nil {
		t.Resources = d.resources(b)
	}
	if b := d.single(blocks["dispatch_payload"], "task"); b != nil {
		attrs, _ := d.content(b.Body, dispatchPayloadSpec)
		t.DispatchPayload = &structs.DispatchPayloadConfig{}
		d.str(attrs, "file", &t.DispatchPayload.File)
	}
	if b := d.single(blocks["lifecycle"], "task"); b != nil {
		attrs, _ := d.content(b.Body, lifecycleSpec)
		t.Lifecycle = &structs.TaskLifecycleConfig{}
		d.str(attrs, "hook", &t.Lifecycle.Hook)
		d.boolean(attrs, "sidecar", &t.Lifecycle.Sidecar)
	}
	t.Identity = d.identity(blocks["identity"])
	for _, tb := range blocks["template"] {
		if d.labels(tb, 0, "", "") {
			t.Templates = append(t.Templates, d.template(tb))
		}
	}
	for _, ab := range blocks["artifact"] {
		if d.labels(ab, 0, "", "") {
			t.Artifacts = append(t.Artifacts, d.artifact(ab))
		}
	}
	return t
}

// artifact decodes an artifact block with the defaults Nomad's server
// gives what it leaves out: mode any, and a destination of local/ (or
// local/<the source's last element> in file mode). Empty options and
// headers are none.
func (d *decoder) artifact(blk *hclsyntax.Block) *structs.TaskArtifact {
	attrs, blocks := d.content(blk.Body, artifactSpec)
	a := &structs.TaskArtifact{GetterMode: structs.GetterModeAny}
	d.str(attrs, "source", &a.GetterSource)
	d.str(attrs, "mode", &a.GetterMode)
	d.boolean(attrs, "insecure", &a.GetterInsecure)
	d.boolean(attrs, "chown", &a.Chown)
	if attrs["destination"] != nil {
		d.str(attrs, "destination", &a.RelativeDest)
	} else {
		a.RelativeDest = structs.DefaultArtifactDest(a.GetterSource, a.GetterMode)
	}
	if m := d.strMap(attrs, blocks, "options", "artifact"); len(m) > 0 {
		a.GetterOptions = m
	}
	if m := d.strMap(attrs, blocks, "headers", "artifact"); len(m) > 0 {
		a.GetterHeaders = m
	}
	return a
}

// optDuration reads a duration that may be absent (nil).
func (d *decoder) optDuration(attrs map[string]*hclsyntax.Attribute, name string) *time.Duration {
	if attrs[name] == nil {
		return nil
	}
	var v time.Duration
	d.duration(attrs, name, &v)
	return &v
}

// template decodes a template block with Nomad's defaults for what it
// leaves out (change_mode restart, splay 5s, perms "0644", delimiters
// {{ and }}, change_signal SIGHUP in signal mode, a 5s script timeout),
// as Nomad's server gives them.
func (d *decoder) template(blk *hclsyntax.Block) *structs.Template {
	attrs, blocks := d.content(blk.Body, templateSpec)
	t := &structs.Template{ChangeMode: structs.DefaultTemplateChangeMode, Splay: structs.DefaultTemplateSplay,
		Perms: structs.DefaultTemplatePerms, LeftDelim: structs.DefaultTemplateLeftDelim,
		RightDelim: structs.DefaultTemplateRightDelim}
	d.str(attrs, "data", &t.EmbeddedTmpl)
	d.str(attrs, "source", &t.SourcePath)
	d.str(attrs, "destination", &t.DestPath)
	d.boolean(attrs, "env", &t.Envvars)
	d.str(attrs, "change_mode", &t.ChangeMode)
	d.str(attrs, "change_signal", &t.ChangeSignal)
	d.duration(attrs, "splay", &t.Splay)
	d.str(attrs, "perms", &t.Perms)
	var id int
	if d.integer(attrs, "uid", &id) {
		t.Uid = &id
	}
	var gid int
	if d.integer(attrs, "gid", &gid) {
		t.Gid = &gid
	}
	d.str(attrs, "left_delimiter", &t.LeftDelim)
	d.str(attrs, "right_delimiter", &t.RightDelim)
	d.boolean(attrs, "error_on_missing_key", &t.ErrMissingKey)
	if t.ChangeSignal == "" && t.ChangeMode == structs.TemplateChangeModeSignal {
		t.ChangeSignal = structs.DefaultTemplateChangeSignal
	}
	t.ChangeSignal = strings.ToUpper(t.ChangeSignal)
	if b := d.single(blocks["change_script"], "template"); b != nil {
		cattrs, _ := d.content(b.Body, changeScriptSpec)
		cs := &structs.ChangeScript{Args: []string{}, Timeout: structs.DefaultChangeScriptTimeout}
		d.str(cattrs, "command", &cs.Command)
		d.strList(cattrs, "args", &cs.Args)
		d.duration(cattrs, "timeout", &cs.Timeout)
		d.boolean(cattrs, "fail_on_error", &cs.FailOnError)
		t.ChangeScript = cs
	}
	if b := d.single(blocks["wait"], "template"); b != nil {
		wattrs, _ := d.content(b.Body, waitSpec)
		t.Wait = &structs.WaitConfig{Min: d.optDuration(wattrs, "min"), Max: d.optDuration(wattrs, "max")}
	}
	return t
}

// identity decodes a task's default identity block. A named one (an
// alternate identity in Nomad) is refused by name.
func (d *decoder) identity(blocks []*hclsyntax.Block) *structs.WorkloadIdentity {
	var defaults []*hclsyntax.Block
	for _, b := range blocks {
		if a := b.Body.Attributes["name"]; a != nil {
			var name string
			d.str(map[string]*hclsyntax.Attribute{"name": a}, "name", &name)
			if name != "" && name != structs.WorkloadIdentityDefaultName {
				d.add(diagAt(a.NameRange, "Unsupported block type",
					"Drover does not support named workload identities (identity %q); only the default identity block, "+
						"whose token lets the task read Drover's variables and services", name))
				continue
			}
		}
		defaults = append(defaults, b)
	}
	b := d.single(defaults, "task")
	if b == nil {
		return nil
	}
	id := &structs.WorkloadIdentity{}
	attrs, _ := d.content(b.Body, identitySpec)
	d.str(attrs, "name", &id.Name)
	d.boolean(attrs, "env", &id.Env)
	d.boolean(attrs, "file", &id.File)
	return id
}

func (d *decoder) resources(blk *hclsyntax.Block) *structs.Resources {
	r := &structs.Resources{}
	attrs, blocks := d.content(blk.Body, resourcesSpec)
	r.Networks = d.networks(blocks["network"])
	d.integer(attrs, "cpu", &r.CPU)
	d.integer(attrs, "memory", &r.MemoryMB)
	d.integer(attrs, "memory_max", &r.MemoryMaxMB)
	d.integer(attrs, "cores", &r.Cores)
	d.integer(attrs, "disk", &r.DiskMB)
	return r
}

// networks decodes network blocks. Every block is kept (the server
// refuses more than one, naming the field); a port with a static value is
// a reserved port, one without a dynamic port, as in Nomad.
func (d *decoder) networks(blocks []*hclsyntax.Block) []*structs.NetworkResource {
	var out []*structs.NetworkResource
	for _, blk := range blocks {
		if !d.labels(blk, 0, "", "") {
			continue
		}
		n := &structs.NetworkResource{}
		attrs, inner := d.content(blk.Body, networkSpec)
		d.str(attrs, "mode", &n.Mode)
		d.integer(attrs, "mbits", &n.MBits)
		d.str(attrs, "hostname", &n.Hostname)
		for _, pb := range inner["port"] {
			if !d.labels(pb, 1, "label", "http") {
				continue
			}
			p := structs.Port{Label: pb.Labels[0]}
			pattrs, _ := d.content(pb.Body, portSpec)
			d.integer(pattrs, "static", &p.Value)
			d.integer(pattrs, "to", &p.To)
			d.str(pattrs, "host_network", &p.HostNetwork)
			if p.Value != 0 {
				n.ReservedPorts = append(n.ReservedPorts, p)
			} else {
				n.DynamicPorts = append(n.DynamicPorts, p)
			}
		}
		if b := d.single(inner["dns"], "network"); b != nil && d.labels(b, 0, "", "") {
			dns := &structs.DNSConfig{}
			dattrs, _ := d.content(b.Body, dnsSpec)
			d.strList(dattrs, "servers", &dns.Servers)
			d.strList(dattrs, "searches", &dns.Searches)
			d.strList(dattrs, "options", &dns.Options)
			n.DNS = dns
		}
		out = append(out, n)
	}
	return out
}

// shorthandOperands are constraint arguments that name the operator and
// carry the value: version = ">= 1.2" is operator "version", value ">= 1.2".
var shorthandOperands = []string{"regexp", "version", "semver", "set_contains", "set_contains_all", "set_contains_any"}

func (d *decoder) constraints(blocks []*hclsyntax.Block) []*structs.Constraint {
	var out []*structs.Constraint
	for _, blk := range blocks {
		if !d.labels(blk, 0, "", "") {
			continue
		}
		if c := d.constraint(blk); c != nil {
			out = append(out, c)
		}
	}
	return out
}

// constraint decodes one constraint block; nil when it is empty or
// distinct_hosts = false.
func (d *decoder) constraint(blk *hclsyntax.Block) *structs.Constraint {
	attrs, _ := d.content(blk.Body, constraintSpec)
	c := &structs.Constraint{}
	d.str(attrs, "attribute", &c.LTarget)
	d.str(attrs, "value", &c.RTarget)
	d.str(attrs, "operator", &c.Operand)

	// At most one way of naming the operator.
	var named []*hclsyntax.Attribute
	for _, n := range append([]string{"operator", "distinct_hosts", "distinct_property"}, shorthandOperands...) {
		if a := attrs[n]; a != nil {
			named = append(named, a)
		}
	}
	if len(named) > 1 {
		d.add(diagAt(named[1].NameRange, "Conflicting constraint operators",
			"%q and %q both set the operator; use one", named[0].Name, named[1].Name))
		return nil
	}
	for _, n := range shorthandOperands {
		if a := attrs[n]; a != nil {
			if attrs["value"] != nil {
				d.add(diagAt(a.NameRange, "Conflicting constraint value", "%s carries the value; remove value", n))
				return nil
			}
			c.Operand = n
			d.str(attrs, n, &c.RTarget)
		}
	}
	if a := attrs["distinct_property"]; a != nil {
		c.Operand = structs.ConstraintDistinctProperty
		if attrs["attribute"] != nil {
			d.add(diagAt(attrs["attribute"].NameRange, "Conflicting constraint attribute",
				"distinct_property names the attribute; remove attribute"))
			return nil
		}
		d.str(attrs, "distinct_property", &c.LTarget)
	}
	if a := attrs["distinct_hosts"]; a != nil {
		var on bool
		if !d.boolean(attrs, "distinct_hosts", &on) {
			return nil
		}
		if attrs["attribute"] != nil || attrs["value"] != nil {
			d.add(diagAt(a.NameRange, "Conflicting constraint arguments",
				"distinct_hosts takes no attribute or value"))
			return nil
		}
		if !on {
			return nil
		}
		return &structs.Constraint{Operand: structs.ConstraintDistinctHosts}
	}
	if len(attrs) == 0 {
		if len(blk.Body.Attributes) == 0 { // else each was reported already
			d.add(diagAt(blk.TypeRange, "Empty constraint", "a constraint needs an attribute and a value, or distinct_hosts = true"))
		}
		return nil
	}
	if c.Operand == "" {
		c.Operand = structs.ConstraintEqual
	}
	return c
}

// affinities decodes affinity blocks. As in Nomad, the operator defaults
// to "=", a shorthand argument (regexp = "...") names the operator and
// carries the value, and an absent weight is the server's default, 50.
func (d *decoder) affinities(blocks []*hclsyntax.Block) []*structs.Affinity {
	var out []*structs.Affinity
	for _, blk := range blocks {
		if !d.labels(blk, 0, "", "") {
			continue
		}
		attrs, _ := d.content(blk.Body, affinitySpec)
		a := &structs.Affinity{Weight: structs.DefaultAffinityWeight}
		d.str(attrs, "attribute", &a.LTarget)
		d.str(attrs, "value", &a.RTarget)
		d.str(attrs, "operator", &a.Operand)
		var named []*hclsyntax.Attribute
		for _, n := range append([]string{"operator"}, shorthandOperands...) {
			if at := attrs[n]; at != nil {
				named = append(named, at)
			}
		}
		if len(named) > 1 {
			d.add(diagAt(named[1].NameRange, "Conflicting affinity operators",
				"%q and %q both set the operator; use one", named[0].Name, named[1].Name))
			continue
		}
		if n := shorthandIn(attrs); n != "" {
			if attrs["value"] != nil {
				d.add(diagAt(attrs[n].NameRange, "Conflicting affinity value", "%s carries the value; remove value", n))
				continue
			}
			a.Operand = n
			d.str(attrs, n, &a.RTarget)
		}
		if a.Operand == "" {
			a.Operand = structs.ConstraintEqual
		}
		if w, ok := d.smallInt(attrs, "weight", -128, 127); ok {
			a.Weight = int8(w)
		}
		out = append(out, a)
	}
	return out
}

// shorthandIn returns the shorthand operand argument among attrs (at most
// one: the caller has refused two), or "".
func shorthandIn(attrs map[string]*hclsyntax.Attribute) string {
	for _, n := range shorthandOperands {
		if attrs[n] != nil {
			return n
		}
	}
	return ""
}

// spreads decodes spread blocks, each with its target "value" { percent }
// blocks; an absent weight is the server's default, 50.
func (d *decoder) spreads(blocks []*hclsyntax.Block) []*structs.Spread {
	var out []*structs.Spread
	for _, blk := range blocks {
		if !d.labels(blk, 0, "", "") {
			continue
		}
		attrs, inner := d.content(blk.Body, spreadSpec)
		s := &structs.Spread{Weight: structs.DefaultSpreadWeight}
		d.str(attrs, "attribute", &s.Attribute)
		if w, ok := d.smallInt(attrs, "weight", -128, 127); ok {
			s.Weight = int8(w)
		}
		for _, tb := range inner["target"] {
			if !d.labels(tb, 1, "value", "dc1") {
				continue
			}
			tattrs, _ := d.content(tb.Body, spreadTargetSpec)
			t := &structs.SpreadTarget{Value: tb.Labels[0]}
			if p, ok := d.smallInt(tattrs, "percent", 0, 255); ok {
				t.Percent = uint8(p)
			}
			s.SpreadTarget = append(s.SpreadTarget, t)
		}
		out = append(out, s)
	}
	return out
}

// smallInt reads an integer argument that must lie in [lo, hi] (the range
// of the field's type; validation checks the meaningful range).
func (d *decoder) smallInt(attrs map[string]*hclsyntax.Attribute, name string, lo, hi int) (int, bool) {
	var v int
	if !d.integer(attrs, name, &v) {
		return 0, false
	}
	if v < lo || v > hi {
		d.add(diagAt(attrs[name].Expr.Range(), "Invalid "+name, "%s must be between %d and %d; got %d", name, lo, hi, v))
		return 0, false
	}
	return v, true
}

func (d *decoder) restart(blk *hclsyntax.Block, base *structs.RestartPolicy) *structs.RestartPolicy {
	attrs, _ := d.content(blk.Body, restartSpec)
	p := *base
	d.integer(attrs, "attempts", &p.Attempts)
	d.duration(attrs, "interval", &p.Interval)
	d.duration(attrs, "delay", &p.Delay)
	d.str(attrs, "mode", &p.Mode)
	d.boolean(attrs, "render_templates", &p.RenderTemplates)
	return &p
}

// reschedule lays the block over base. Setting attempts without saying
// unlimited means a limited policy (Nomad's service default is unlimited,
// which forbids attempts).
func (d *decoder) reschedule(blk *hclsyntax.Block, base *structs.ReschedulePolicy) *structs.ReschedulePolicy {
	attrs, _ := d.content(blk.Body, rescheduleSpec)
	p := *base
	if d.integer(attrs, "attempts", &p.Attempts) && attrs["unlimited"] == nil && p.Attempts > 0 {
		p.Unlimited = false
	}
	d.duration(attrs, "interval", &p.Interval)
	d.duration(attrs, "delay", &p.Delay)
	d.str(attrs, "delay_function", &p.DelayFunction)
	d.duration(attrs, "max_delay", &p.MaxDelay)
	d.boolean(attrs, "unlimited", &p.Unlimited)
	return &p
}

// periodic decodes a periodic block as Nomad's parser and API defaults
// leave it: enabled unless it says otherwise, spec type cron, time zone
// UTC. cron (one spec, the older argument) and crons (a list) are kept
// apart, as Nomad's Spec and Specs.
func (d *decoder) periodic(blk *hclsyntax.Block) *structs.PeriodicConfig {
	attrs, _ := d.content(blk.Body, periodicSpec)
	p := &structs.PeriodicConfig{Enabled: true, SpecType: structs.PeriodicSpecCron, TimeZone: "UTC"}
	d.str(attrs, "cron", &p.Spec)
	d.strList(attrs, "crons", &p.Specs)
	d.boolean(attrs, "prohibit_overlap", &p.ProhibitOverlap)
	d.str(attrs, "time_zone", &p.TimeZone)
	d.boolean(attrs, "enabled", &p.Enabled)
	return p
}

// parameterized decodes a parameterized block; an absent payload is left
// for the server's default (optional), as Nomad's parser leaves it.
func (d *decoder) parameterized(blk *hclsyntax.Block) *structs.ParameterizedJobConfig {
	attrs, _ := d.content(blk.Body, parameterizedSpec)
	p := &structs.ParameterizedJobConfig{}
	d.str(attrs, "payload", &p.Payload)
	d.strList(attrs, "meta_required", &p.MetaRequired)
	d.strList(attrs, "meta_optional", &p.MetaOptional)
	return p
}

func (d *decoder) migrate(blk *hclsyntax.Block, base *structs.MigrateStrategy) *structs.MigrateStrategy {
	attrs, _ := d.content(blk.Body, migrateSpec)
	m := *base
	d.integer(attrs, "max_parallel", &m.MaxParallel)
	d.str(attrs, "health_check", &m.HealthCheck)
	d.duration(attrs, "min_healthy_time", &m.MinHealthyTime)
	d.duration(attrs, "healthy_deadline", &m.HealthyDeadline)
	return &m
}

// disconnect decodes a group's disconnect block as written (the server
// fills replace and reconcile when absent).
func (d *decoder) disconnect(blk *hclsyntax.Block) *structs.DisconnectStrategy {
	attrs, _ := d.content(blk.Body, disconnectSpec)
	ds := &structs.DisconnectStrategy{}
	d.duration(attrs, "lost_after", &ds.LostAfter)
	ds.StopOnClientAfter = d.optDuration(attrs, "stop_on_client_after")
	if attrs["replace"] != nil {
		var r bool
		if d.boolean(attrs, "replace", &r) {
			ds.Replace = &r
		}
	}
	d.str(attrs, "reconcile", &ds.Reconcile)
	return ds
}

// update decodes an update block laid over base (Nomad's defaults, or the
// job's block for a group).
func (d *decoder) update(blk *hclsyntax.Block, base *structs.UpdateStrategy) *structs.UpdateStrategy {
	attrs, _ := d.content(blk.Body, updateSpec)
	u := *base
	d.duration(attrs, "stagger", &u.Stagger)
	d.integer(attrs, "max_parallel", &u.MaxParallel)
	d.str(attrs, "health_check", &u.HealthCheck)
	d.duration(attrs, "min_healthy_time", &u.MinHealthyTime)
	d.duration(attrs, "healthy_deadline", &u.HealthyDeadline)
	d.duration(attrs, "progress_deadline", &u.ProgressDeadline)
	d.boolean(attrs, "auto_revert", &u.AutoRevert)
	d.boolean(attrs, "auto_promote", &u.AutoPromote)
	d.integer(attrs, "canary", &u.Canary)
	return &u
}

// scaling decodes a group's scaling block with Nomad's server defaults:
// enabled, min the group's count, and max -1 when absent (which
// validation refuses: max is required).
func (d *decoder) scaling(blk *hclsyntax.Block, count int) *structs.ScalingPolicy {
	attrs, blocks := d.content(blk.Body, scalingSpec)
	p := &structs.ScalingPolicy{Enabled: true, Min: int64(count), Max: -1}
	min, max := count, -1
	if d.integer(attrs, "min", &min) {
		p.Min = int64(min)
	}
	if d.integer(attrs, "max", &max) {
		p.Max = int64(max)
	}
	d.boolean(attrs, "enabled", &p.Enabled)
	d.str(attrs, "type", &p.Type)
	if b := d.single(blocks["policy"], "scaling"); b != nil {
		p.Policy = d.policyBody(b.Body)
	}
	return p
}

// policyBody reads an autoscaler policy, which Drover stores without
// reading it: arguments as values, blocks as lists of maps under their
// type, and a labeled block nested under its labels, as Nomad does
// (check "cpu" { ... } is {"check": [{"cpu": [{...}]}]}).
func (d *decoder) policyBody(b *hclsyntax.Body) map[string]any {
	out := map[string]any{}
	for _, a := range sortedAttrs(b) {
		v, ok := d.eval(a)
		if !ok {
			continue
		}
		g, err := toGo(v)
		if err != nil {
			d.add(diagAt(a.Expr.Range(), "Invalid value for "+a.Name, "%v", err))
			continue
		}
		out[a.Name] = g
	}
	for _, blk := range b.Blocks {
		var v any = d.policyBody(blk.Body)
		for i := len(blk.Labels) - 1; i >= 0; i-- {
			v = map[string]any{blk.Labels[i]: []any{v}}
		}
		list, _ := out[blk.Type].([]any)
		out[blk.Type] = append(list, v)
	}
	return out
}

// logs decodes a task's logs block over Nomad's defaults (ten files of
// 10 MB).
func (d *decoder) logs(blk *hclsyntax.Block) *structs.LogConfig {
	attrs, _ := d.content(blk.Body, logsSpec)
	l := structs.DefaultLogConfig()
	d.integer(attrs, "max_files", &l.MaxFiles)
	d.integer(attrs, "max_file_size", &l.MaxFileSizeMB)
	d.boolean(attrs, "disabled", &l.Disabled)
	return l
}

// volumes decodes a group's volume blocks, keyed by their labels.
func (d *decoder) volumes(blocks []*hclsyntax.Block) map[string]*structs.VolumeRequest {
	if len(blocks) == 0 {
		return nil
	}
	out := make(map[string]*structs.VolumeRequest, len(blocks))
	for _, blk := range blocks {
		if !d.labels(blk, 1, "name", "data") {
			continue
		}
		name := blk.Labels[0]
		if _, dup := out[name]; dup {
			d.add(diagAt(blk.LabelRanges[0], "Duplicate volume block", "the group already has a volume %q", name))
			continue
		}
		attrs, _ := d.content(blk.Body, volumeSpec)
		v := &structs.VolumeRequest{Name: name}
		d.str(attrs, "type", &v.Type)
		d.str(attrs, "source", &v.Source)
		d.boolean(attrs, "read_only", &v.ReadOnly)
		out[name] = v
	}
	return out
}

// volumeMount decodes a task's volume_mount block. propagation_mode may
// only say "private", the default (host-to-task and bidirectional are
// refused by name).
func (d *decoder) volumeMount(blk *hclsyntax.Block) *structs.VolumeMount {
	attrs, _ := d.content(blk.Body, volumeMountSpec)
	m := &structs.VolumeMount{}
	d.str(attrs, "volume", &m.Volume)
	d.str(attrs, "destination", &m.Destination)
	d.boolean(attrs, "read_only", &m.ReadOnly)
	if a := attrs["propagation_mode"]; a != nil {
		var mode string
		d.str(attrs, "propagation_mode", &mode)
		if mode != "" && mode != structs.VolumeMountPropagationPrivate {
			d.add(diagAt(a.NameRange, "Unsupported argument",
				"Drover does not support propagation_mode %q in a volume_mount block (only %q)", mode, structs.VolumeMountPropagationPrivate))
		}
	}
	return m
}

// ephemeralDisk decodes a group's ephemeral_disk block over Nomad's
// defaults (300 MB, not sticky, no migration).
func (d *decoder) ephemeralDisk(blk *hclsyntax.Block) *structs.EphemeralDisk {
	attrs, _ := d.content(blk.Body, ephemeralDiskSpec)
	e := &structs.EphemeralDisk{SizeMB: structs.DefaultEphemeralDiskMB}
	d.integer(attrs, "size", &e.SizeMB)
	d.boolean(attrs, "sticky", &e.Sticky)
	d.boolean(attrs, "migrate", &e.Migrate)
	return e
}
