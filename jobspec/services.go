package jobspec

import (
	"github.com/drover-project/drover/structs"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

var (
	serviceSpec = &bodySpec{what: "service",
		attrs: []string{"name", "port", "tags", "address_mode", "address", "task", "on_update",
			"provider", "meta"},
		blocks: []string{"check", "check_restart", "meta"}}
	checkSpec = &bodySpec{what: "check",
		attrs: []string{"name", "type", "command", "args", "path", "protocol", "port", "address_mode",
			"interval", "timeout", "initial_status", "tls_skip_verify", "method", "body", "task",
			"success_before_passing", "failures_before_critical", "on_update"},
		blocks: []string{"header", "check_restart"}}
	checkRestartSpec = &bodySpec{what: "check_restart", attrs: []string{"limit", "grace", "ignore_warnings"}}
)

// services decodes service blocks as Nomad's parser does: what is written,
// no defaults (the server's Canonicalize gives those).
func (d *decoder) services(blocks []*hclsyntax.Block) []*structs.Service {
	var out []*structs.Service
	for _, blk := range blocks {
		if !d.labels(blk, 0, "", "") {
			continue
		}
		out = append(out, d.service(blk))
	}
	return out
}

func (d *decoder) service(blk *hclsyntax.Block) *structs.Service {
	s := &structs.Service{}
	attrs, blocks := d.content(blk.Body, serviceSpec)
	d.str(attrs, "name", &s.Name)
	d.str(attrs, "port", &s.PortLabel)
	d.strList(attrs, "tags", &s.Tags)
	d.str(attrs, "address_mode", &s.AddressMode)
	d.str(attrs, "address", &s.Address)
	d.str(attrs, "task", &s.TaskName)
	d.str(attrs, "on_update", &s.OnUpdate)
	d.str(attrs, "provider", &s.Provider)
	s.Meta = d.strMap(attrs, blocks, "meta", "service")
	if b := d.single(blocks["check_restart"], "service"); b != nil {
		s.CheckRestart = d.checkRestart(b)
	}
	for _, cb := range blocks["check"] {
		if d.labels(cb, 0, "", "") {
			s.Checks = append(s.Checks, d.check(cb))
		}
	}
	return s
}

func (d *decoder) check(blk *hclsyntax.Block) *structs.ServiceCheck {
	c := &structs.ServiceCheck{}
	attrs, blocks := d.content(blk.Body, checkSpec)
	d.str(attrs, "name", &c.Name)
	d.str(attrs, "type", &c.Type)
	d.str(attrs, "command", &c.Command)
	d.strList(attrs, "args", &c.Args)
	d.str(attrs, "path", &c.Path)
	d.str(attrs, "protocol", &c.Protocol)
	d.str(attrs, "port", &c.PortLabel)
	d.str(attrs, "address_mode", &c.AddressMode)
	d.duration(attrs, "interval", &c.Interval)
	d.duration(attrs, "timeout", &c.Timeout)
	d.str(attrs, "initial_status", &c.InitialStatus)
	d.boolean(attrs, "tls_skip_verify", &c.TLSSkipVerify)
	d.str(attrs, "method", &c.Method)
	d.str(attrs, "body", &c.Body)
	d.str(attrs, "task", &c.TaskName)
	d.integer(attrs, "success_before_passing", &c.SuccessBeforePassing)
	d.integer(attrs, "failures_before_critical", &c.FailuresBeforeCritical)
	d.str(attrs, "on_update", &c.OnUpdate)
	if b := d.single(blocks["header"], "check"); b != nil {
		c.Header = d.header(b)
	}
	if b := d.single(blocks["check_restart"], "check"); b != nil {
		c.CheckRestart = d.checkRestart(b)
	}
	return c
}

// header reads header { Name = ["value", ...] }.
func (d *decoder) header(blk *hclsyntax.Block) map[string][]string {
	for _, inner := range blk.Body.Blocks {
		d.add(diagAt(inner.TypeRange, "Unsupported block type",
			"header holds only Name = [\"value\", ...] pairs; blocks are not allowed in it"))
	}
	out := map[string][]string{}
	for _, a := range sortedAttrs(blk.Body) {
		if v, ok := d.eval(a); ok {
			l, diag := toStringList(v, a.Expr.Range(), "header."+a.Name)
			d.addOr(diag, func() { out[a.Name] = l })
		}
	}
	return out
}

func (d *decoder) checkRestart(blk *hclsyntax.Block) *structs.CheckRestart {
	cr := &structs.CheckRestart{}
	attrs, _ := d.content(blk.Body, checkRestartSpec)
	d.integer(attrs, "limit", &cr.Limit)
	d.duration(attrs, "grace", &cr.Grace)
	d.boolean(attrs, "ignore_warnings", &cr.IgnoreWarnings)
	return cr
}
