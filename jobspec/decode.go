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
		attrs:  []string{"name", "type", "priority", "datacenters", "region", "namespace", "all_at_once", "meta"},
		blocks: []string{"group", "task", "constraint", "meta", "reschedule", "migrate", "update", "periodic", "parameterized"}}
	groupSpec = &bodySpec{what: "group",
		attrs:  []string{"count", "meta"},
		blocks: []string{"task", "constraint", "restart", "reschedule", "migrate", "update", "meta", "service", "network", "scaling"}}
	taskSpec = &bodySpec{what: "task",
		attrs:  []string{"driver", "user", "kill_timeout", "kill_signal", "leader", "config", "env", "meta"},
		blocks: []string{"config", "env", "meta", "resources", "constraint", "identity", "service", "template", "dispatch_payload", "lifecycle"}}
	identitySpec = &bodySpec{what: "identity", attrs: []string{"name", "env", "file"}}
	templateSpec = &bodySpec{what: "template",
		attrs: []string{"data", "source", "destination", "env", "change_mode", "change_signal", "splay",
			"perms", "uid", "gid", "left_delimiter", "right_delimiter", "error_on_missing_key"},
		blocks: []string{"change_script", "wait"}}
	changeScriptSpec = &bodySpec{what: "change_script", attrs: []string{"command", "args", "timeout", "fail_on_error"}}
	waitSpec         = &bodySpec{what: "wait", attrs: []string{"min", "max"}}
	resourcesSpec    = &bodySpec{what: "resources", attrs: []string{"cpu", "memory", "cores", "disk"},
		blocks: []string{"network"}}
	networkSpec = &bodySpec{what: "network", attrs: []string{"mode", "mbits", "hostname"},
		blocks: []string{"port", "dns"}}
	portSpec       = &bodySpec{what: "port", attrs: []string{"static", "to", "host_network"}}
	dnsSpec        = &bodySpec{what: "dns", attrs: []string{"servers", "searches", "options"}}
	constraintSpec = &bodySpec{what: "constraint", attrs: []string{"attribute", "operator", "value",
		"distinct_hosts", "distinct_property", "regexp", "version", "semver",
		"set_contains", "set_contains_all", "set_contains_any"}}
	restartSpec    = &bodySpec{what: "restart", attrs: []string{"attempts", "interval", "delay", "mode", "render_templates"}}
	rescheduleSpec = &bodySpec{what: "reschedule",
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
	d.str(attrs, "region", &job.Region)
	d.str(attrs, "namespace", &job.Namespace)
	d.boolean(attrs, "all_at_once", &job.AllAtOnce)
	job.Meta = d.strMap(attrs, blocks, "meta", "job")
	job.Constraints = d.constraints(blocks["constraint"])
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
		if t := d.task(tb); t != nil {
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
	if b := d.single(blocks["scaling"], "group"); b != nil {
		tg.Scaling = d.scaling(b, tg.Count)
	}

	if len(blocks["task"]) == 0 {
		d.add(diagAt(blk.OpenBraceRange, "Missing task", "a group needs at least one task block"))
	}
	for _, tb := range blocks["task"] {
		if t := d.task(tb); t != nil {
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

func (d *decoder) task(blk *hclsyntax.Block) *structs.Task {
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
	t.Config = d.freeform(attrs, blocks, "config", "task")
	t.Env = d.strMap(attrs, blocks, "env", "task")
	t.Meta = d.strMap(attrs, blocks, "meta", "task")
	t.Constraints = d.constraints(blocks["constraint"])
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
	return t
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
					"Drover does not support named workload identities (identity %q); only the default identity block", name))
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
