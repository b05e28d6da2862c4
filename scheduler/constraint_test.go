package scheduler

import (
	"testing"

	"github.com/drover-project/drover/scheduler/mock"
	"github.com/drover-project/drover/structs"
)

func TestConstraintOperands(t *testing.T) {
	node := mock.Node()
	node.ID = "11111111-2222-3333-4444-555555555555"
	node.Name = "web-01"
	node.Datacenter = "eu-west-1a"
	node.NodeClass = "large"
	node.NodePool = "prod"
	node.Attributes["cpu.numcores"] = "8"
	node.Attributes["kernel.version"] = "5.15.0-91-generic"
	node.Attributes["driver.docker.version"] = "24.0.7"
	node.Attributes["tags"] = "ssd, gpu,fast"
	node.Meta["rack"] = "r12"
	node.Meta["min_cores"] = "4"

	c := func(l, op, r string) *structs.Constraint {
		return &structs.Constraint{LTarget: l, Operand: op, RTarget: r}
	}
	cases := []struct {
		name string
		c    *structs.Constraint
		want bool
	}{
		{"eq attr", c("${attr.kernel.name}", "=", "linux"), true},
		{"eq attr miss", c("${attr.kernel.name}", "=", "windows"), false},
		{"eq default operand", c("${attr.kernel.name}", "", "linux"), true},
		{"eq alt", c("${attr.kernel.name}", "==", "linux"), true},
		{"eq unset", c("${attr.nope}", "=", "x"), false},
		{"ne", c("${attr.kernel.name}", "!=", "windows"), true},
		{"ne same", c("${attr.kernel.name}", "!=", "linux"), false},
		{"ne unset differs", c("${attr.nope}", "!=", "x"), true},
		{"ne both unset", c("${attr.nope}", "!=", "${meta.nope}"), false},
		{"node id", c("${node.unique.id}", "=", node.ID), true},
		{"node name", c("${node.unique.name}", "=", "web-01"), true},
		{"datacenter", c("${node.datacenter}", "=", "eu-west-1a"), true},
		{"class", c("${node.class}", "=", "large"), true},
		{"pool", c("${node.pool}", "=", "prod"), true},
		{"meta", c("${meta.rack}", "=", "r12"), true},
		{"unknown target", c("${node.nope}", "=", ""), false},
		{"lt numeric", c("${attr.cpu.numcores}", "<", "10"), true}, // lexically "8" > "10"
		{"le numeric", c("${attr.cpu.numcores}", "<=", "8"), true},
		{"gt numeric", c("${attr.cpu.numcores}", ">", "10"), false},
		{"ge numeric", c("${attr.cpu.numcores}", ">=", "8.0"), true},
		{"gt interpolated right", c("${attr.cpu.numcores}", ">", "${meta.min_cores}"), true},
		{"lt lexical", c("${meta.rack}", "<", "r2"), true}, // "r12" < "r2"
		{"gt lexical", c("${node.datacenter}", ">", "eu"), true},
		{"order unset", c("${attr.nope}", "<", "10"), false},
		{"regexp", c("${attr.kernel.version}", "regexp", `^5\.1[0-9]\.`), true},
		{"regexp miss", c("${attr.kernel.version}", "regexp", `^6\.`), false},
		{"regexp invalid", c("${attr.kernel.version}", "regexp", `(`), false},
		{"version", c("${attr.driver.docker.version}", "version", ">= 20.10, < 25"), true},
		{"version miss", c("${attr.driver.docker.version}", "version", "~> 23.0"), false},
		{"version prerelease vs release term", c("${attr.kernel.version}", "version", ">= 5.0"), false}, // "-91-generic" is a prerelease
		{"semver", c("${attr.driver.docker.version}", "semver", ">= 24.0.0"), true},
		{"semver miss", c("${attr.driver.docker.version}", "semver", "< 24.0.0"), false},
		{"set_contains", c("${attr.tags}", "set_contains", "ssd,gpu"), true},
		{"set_contains miss", c("${attr.tags}", "set_contains", "ssd,nvme"), false},
		{"set_contains_all", c("${attr.tags}", "set_contains_all", "fast, ssd"), true},
		{"set_contains_any", c("${attr.tags}", "set_contains_any", "nvme,fast"), true},
		{"set_contains_any miss", c("${attr.tags}", "set_contains_any", "nvme,hdd"), false},
		{"is_set", c("${meta.rack}", "is_set", ""), true},
		{"is_set miss", c("${meta.nope}", "is_set", ""), false},
		{"is_not_set", c("${meta.nope}", "is_not_set", ""), true},
		{"is_not_set miss", c("${meta.rack}", "is_not_set", ""), false},
		{"distinct_hosts is not a node check", c("", "distinct_hosts", ""), true},
	}
	cache := newCompileCache()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := newConstraintChecker(tc.c, cache)
			if got := k.feasible(node); got != tc.want {
				t.Fatalf("%s on node = %v, want %v", tc.c, got, tc.want)
			}
		})
	}
}

func TestConstraintEscapesClass(t *testing.T) {
	cache := newCompileCache()
	cases := []struct {
		c    *structs.Constraint
		want bool
	}{
		{&structs.Constraint{LTarget: "${attr.kernel.name}", RTarget: "linux"}, false},
		{&structs.Constraint{LTarget: "${node.unique.id}", RTarget: "x"}, true},
		{&structs.Constraint{LTarget: "${attr.unique.hostname}", RTarget: "x"}, true},
		{&structs.Constraint{LTarget: "${meta.rack}", RTarget: "${node.unique.name}"}, true},
	}
	for _, tc := range cases {
		if got := newConstraintChecker(tc.c, cache).escapes; got != tc.want {
			t.Errorf("%s escapes = %v, want %v", tc.c, got, tc.want)
		}
	}
}

func TestRegexpCompiledOncePerEval(t *testing.T) {
	cache := newCompileCache()
	a := newConstraintChecker(&structs.Constraint{LTarget: "${attr.a}", Operand: "regexp", RTarget: "^x+$"}, cache)
	b := newConstraintChecker(&structs.Constraint{LTarget: "${attr.b}", Operand: "regexp", RTarget: "^x+$"}, cache)
	if a.re == nil || a.re != b.re {
		t.Fatalf("same pattern compiled twice: %p %p", a.re, b.re)
	}
}

func TestDriverCheck(t *testing.T) {
	tg := &structs.TaskGroup{Tasks: []*structs.Task{{Name: "a", Driver: "mock"}, {Name: "b", Driver: "docker"}}}
	cases := []struct {
		name string
		edit func(n *structs.Node)
		want bool
	}{
		{"docker missing", func(n *structs.Node) {}, false},
		{"docker healthy", func(n *structs.Node) {
			n.Drivers["docker"] = &structs.DriverInfo{Detected: true, Healthy: true}
		}, true},
		{"docker unhealthy", func(n *structs.Node) {
			n.Drivers["docker"] = &structs.DriverInfo{Detected: true, Healthy: false}
		}, false},
		{"docker undetected", func(n *structs.Node) {
			n.Drivers["docker"] = &structs.DriverInfo{Detected: false, Healthy: true}
		}, false},
		{"docker by attribute", func(n *structs.Node) { n.Attributes["driver.docker"] = "1" }, true},
		{"docker attribute false", func(n *structs.Node) { n.Attributes["driver.docker"] = "0" }, false},
		{"driver info wins over attribute", func(n *structs.Node) {
			n.Attributes["driver.docker"] = "1"
			n.Drivers["docker"] = &structs.DriverInfo{Detected: true, Healthy: false}
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := mock.Node()
			tc.edit(n)
			if got := newDriverCheck(tg).feasible(n); got != tc.want {
				t.Fatalf("feasible = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestGlobMatch(t *testing.T) {
	cases := []struct {
		pattern, s string
		want       bool
	}{
		{"*", "dc1", true},
		{"dc1", "dc1", true},
		{"dc1", "dc2", false},
		{"dc*", "dc2", true},
		{"*-1a", "eu-west-1a", true},
		{"eu-*-1?", "eu-west-1a", false},
		{"eu*1*", "eu-west-1a", true},
		{"a*b*c", "abxbc", true},
		{"a*b*c", "acb", false},
		{"", "", true},
		{"", "x", false},
	}
	for _, tc := range cases {
		if got := globMatch(tc.pattern, tc.s); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}
