package allocrunner

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/drover-project/drover/agent/client/allocdir"
	"github.com/drover-project/drover/structs"
)

// envFixture is one allocation of job "job-1" (named "Job One"), group
// "web", task "api", on node "node-a", before a test changes it.
type envFixture struct {
	alloc *structs.Allocation
	tg    *structs.TaskGroup
	task  *structs.Task
	node  NodeInfo
	root  string
}

func newEnvFixture(t *testing.T) *envFixture {
	task := &structs.Task{Name: "api", Driver: "raw_exec"}
	tg := &structs.TaskGroup{Name: "web", Count: 3, Tasks: []*structs.Task{task}}
	job := &structs.Job{ID: "job-1", Name: "Job One", Type: structs.JobTypeService, Namespace: "prod",
		Region: "job-region", TaskGroups: []*structs.TaskGroup{tg}}
	alloc := &structs.Allocation{ID: "0123456789abcdef-0000", Name: "job-1.web[2]", Namespace: "prod",
		JobID: "job-1", TaskGroup: "web", Job: job,
		AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
			"api": {Cpu: structs.AllocatedCpuResources{CpuShares: 500, ReservedCores: []uint16{5, 0, 2, 1}},
				Memory: structs.AllocatedMemoryResources{MemoryMB: 256, MemoryMaxMB: 512}}}}}
	node := NodeInfo{ID: "node-id-1", Name: "node-a", Datacenter: "dc2", Region: "eu", Class: "small", Pool: "batch",
		Attributes: map[string]string{"kernel.name": "linux", "cpu.arch": "amd64"},
		Meta:       map[string]string{"rack": "r7", "rack-id": "r7-1"}}
	return &envFixture{alloc: alloc, tg: tg, task: task, node: node, root: t.TempDir()}
}

func (f *envFixture) build(t *testing.T) *taskEnv {
	t.Helper()
	ad, err := allocdir.New(f.root, f.alloc.ID)
	if err != nil {
		t.Fatal(err)
	}
	td, err := ad.TaskDir(f.task.Name)
	if err != nil {
		t.Fatal(err)
	}
	return buildTaskEnv(f.alloc, f.tg, f.task, ad, td, f.node)
}

func TestBuildTaskEnv(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, f *envFixture)
		want   map[string]string // "" means: not set
	}{
		{name: "task variables",
			want: map[string]string{
				"NOMAD_ALLOC_ID": "0123456789abcdef-0000", "NOMAD_SHORT_ALLOC_ID": "01234567",
				"NOMAD_ALLOC_NAME": "job-1.web[2]", "NOMAD_ALLOC_INDEX": "2",
				"NOMAD_GROUP_NAME": "web", "NOMAD_TASK_NAME": "api",
				"NOMAD_JOB_ID": "job-1", "NOMAD_JOB_NAME": "Job One", "NOMAD_JOB_PARENT_ID": "",
				"NOMAD_DC": "dc2", "NOMAD_REGION": "eu", "NOMAD_NAMESPACE": "prod",
				"NOMAD_CPU_LIMIT": "500", "NOMAD_CPU_CORES": "0-2,5",
				"NOMAD_MEMORY_LIMIT": "256", "NOMAD_MEMORY_MAX_LIMIT": "512",
			}},
		{name: "limits without max memory or cores; region from the job",
			change: func(t *testing.T, f *envFixture) {
				f.alloc.AllocatedResources = nil
				f.task.Resources = &structs.Resources{CPU: 100, MemoryMB: 64}
				f.node.Region = ""
			},
			want: map[string]string{"NOMAD_CPU_LIMIT": "100", "NOMAD_MEMORY_LIMIT": "64",
				"NOMAD_MEMORY_MAX_LIMIT": "", "NOMAD_CPU_CORES": "", "NOMAD_REGION": "job-region"}},
		{name: "a child job's parent",
			change: func(t *testing.T, f *envFixture) { f.alloc.Job.ParentID = "nightly" },
			want:   map[string]string{"NOMAD_JOB_PARENT_ID": "nightly"}},
		{name: "meta merged, in the key's case and in upper case",
			change: func(t *testing.T, f *envFixture) {
				f.alloc.Job.Meta = map[string]string{"owner": "job", "team": "infra", "a.b": "dotted"}
				f.tg.Meta = map[string]string{"owner": "group", "rack-id": "r9"}
				f.task.Meta = map[string]string{"owner": "task"}
			},
			want: map[string]string{
				"NOMAD_META_owner": "task", "NOMAD_META_OWNER": "task",
				"NOMAD_META_team": "infra", "NOMAD_META_TEAM": "infra",
				"NOMAD_META_rack_id": "r9", "NOMAD_META_RACK_ID": "r9", "NOMAD_META_rack-id": "",
				"NOMAD_META_a.b": "dotted", "NOMAD_META_A.B": "dotted",
			}},
		{name: "a name written as it is finally spelled wins",
			change: func(t *testing.T, f *envFixture) {
				f.task.Meta = map[string]string{"a": "lower", "A": "upper", "x~y": "cleaned", "x_y": "as written"}
			},
			want: map[string]string{"NOMAD_META_a": "lower", "NOMAD_META_A": "upper",
				"NOMAD_META_x_y": "as written", "NOMAD_META_X_Y": "as written"}},
		{name: "meta values refer to the node and the task variables",
			change: func(t *testing.T, f *envFixture) {
				f.task.Meta = map[string]string{"where": "${node.class}/${NOMAD_ALLOC_INDEX}/${meta.rack}"}
			},
			want: map[string]string{"NOMAD_META_where": "small/2/r7", "NOMAD_META_WHERE": "small/2/r7"}},
		{name: "env values refer to the node, the layers below and each other",
			change: func(t *testing.T, f *envFixture) {
				t.Setenv("DROVER_TEST_HOST", "h")
				f.task.Meta = map[string]string{"owner": "ops"}
				f.task.Env = map[string]string{
					"CLASS": "${node.class}", "INDEX": "${NOMAD_ALLOC_INDEX}",
					"WHO":  "${NOMAD_META_owner}/${NOMAD_META_OWNER}",
					"NODE": "${node.unique.id} ${node.unique.name} ${node.datacenter} ${node.region} ${node.pool}",
					"ATTR": "${attr.kernel.name}-${attr.cpu.arch}", "RACK": `${meta.rack} ${meta["rack-id"]}`,
					"A": "${B}+a", "B": "${C}+b", "C": "${attr.kernel.name}",
					"FROM_HOST":        "${DROVER_TEST_HOST}/x",
					"DROVER_TEST_HOST": "${DROVER_TEST_HOST}:more",
					"ENV_ROOT":         `${env.NOMAD_TASK_NAME} ${env["NOMAD_JOB_ID"]}`,
					"SPACES":           "${ node.class }",
				}
			},
			want: map[string]string{
				"CLASS": "small", "INDEX": "2", "WHO": "ops/ops", "NODE": "node-id-1 node-a dc2 eu batch",
				"ATTR": "linux-amd64", "RACK": "r7 r7-1", "A": "linux+b+a", "B": "linux+b", "C": "linux",
				"FROM_HOST": "h:more/x", "DROVER_TEST_HOST": "h:more", "ENV_ROOT": "api job-1", "SPACES": "small",
			}},
		{name: "unknown references are left as written",
			change: func(t *testing.T, f *envFixture) {
				f.task.Env = map[string]string{
					"U":     "${nope} ${attr.nope} ${meta.nope} ${NOMAD_PORT_http} ${env.NOPE} $HOME ${upper(node.class)}",
					"LOOP1": "${LOOP2}", "LOOP2": "${LOOP1}",
				}
			},
			want: map[string]string{
				"U":     "${nope} ${attr.nope} ${meta.nope} ${NOMAD_PORT_http} ${env.NOPE} $HOME ${upper(node.class)}",
				"LOOP1": "${LOOP1}", "LOOP2": "${LOOP1}",
			}},
		{name: "the env block wins over task variables; meta-prefixed names are cleaned",
			change: func(t *testing.T, f *envFixture) {
				f.task.Env = map[string]string{"NOMAD_DC": "mine", "NOMAD_META_my-key": "v",
					"NOMAD_META_b~c": "cleaned", "NOMAD_META_b_c": "as written"}
			},
			want: map[string]string{"NOMAD_DC": "mine", "NOMAD_META_my_key": "v", "NOMAD_META_my-key": "",
				"NOMAD_META_b_c": "as written", "NOMAD_META_b~c": ""}},
		{name: "group ports",
			change: func(t *testing.T, f *envFixture) {
				f.alloc.AllocatedResources.Shared.Ports = []structs.AllocatedPortMapping{
					{Label: "http", Value: 25001, HostIP: "10.0.0.5"},
					{Label: "db-main", Value: 8080, To: 5432, HostIP: "10.0.0.5"},
				}
				f.task.Env = map[string]string{"LISTEN": "${NOMAD_IP_http}:${NOMAD_PORT_http}"}
			},
			want: map[string]string{
				"NOMAD_PORT_http": "25001", "NOMAD_HOST_PORT_http": "25001", "NOMAD_ALLOC_PORT_http": "25001",
				"NOMAD_IP_http": "10.0.0.5", "NOMAD_HOST_IP_http": "10.0.0.5",
				"NOMAD_ADDR_http": "10.0.0.5:25001", "NOMAD_HOST_ADDR_http": "10.0.0.5:25001",
				// to is the port inside; the label is cleaned where Nomad cleans it.
				"NOMAD_PORT_db_main": "5432", "NOMAD_ALLOC_PORT_db-main": "5432", "NOMAD_HOST_PORT_db_main": "8080",
				"NOMAD_ADDR_db_main": "10.0.0.5:8080", "NOMAD_PORT_db-main": "",
				"LISTEN": "10.0.0.5:25001",
			}},
		{name: "legacy task ports: the task's own and another task's",
			change: func(t *testing.T, f *envFixture) {
				f.alloc.AllocatedResources.Tasks["api"].Networks = []*structs.NetworkResource{{IP: "10.0.0.5",
					ReservedPorts: []structs.Port{{Label: "rpc", Value: 9000}}, DynamicPorts: []structs.Port{{Label: "dyn", Value: 21000}}}}
				f.alloc.AllocatedResources.Tasks["side"] = &structs.AllocatedTaskResources{Networks: []*structs.NetworkResource{{
					IP: "10.0.0.5", DynamicPorts: []structs.Port{{Label: "metrics", Value: 21001}}}}}
			},
			want: map[string]string{
				"NOMAD_PORT_rpc": "9000", "NOMAD_HOST_PORT_rpc": "9000", "NOMAD_IP_rpc": "10.0.0.5", "NOMAD_IPv4_rpc": "10.0.0.5",
				"NOMAD_ADDR_rpc": "10.0.0.5:9000", "NOMAD_PORT_dyn": "21000",
				"NOMAD_ADDR_side_metrics": "10.0.0.5:21001", "NOMAD_IP_side_metrics": "10.0.0.5", "NOMAD_PORT_side_metrics": "21001",
				"NOMAD_PORT_metrics": "",
			}},
		{name: "client credentials and NOMAD_ variables stay out",
			change: func(t *testing.T, f *envFixture) {
				t.Setenv("VAULT_TOKEN", "secret")
				t.Setenv("NOMAD_ADDR", "http://elsewhere")
				t.Setenv("DROVER_TEST_KEPT", "kept")
			},
			want: map[string]string{"VAULT_TOKEN": "", "NOMAD_ADDR": "", "DROVER_TEST_KEPT": "kept"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newEnvFixture(t)
			if tc.change != nil {
				tc.change(t, f)
			}
			env := f.build(t).env
			for k, want := range tc.want {
				got, ok := env[k]
				switch {
				case want == "" && ok:
					t.Errorf("%s = %q, want it unset", k, got)
				case want != "" && got != want:
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

func TestTaskDirVariables(t *testing.T) {
	f := newEnvFixture(t)
	env := f.build(t).env
	dir := filepath.Join(f.root, f.alloc.ID)
	want := map[string]string{
		"NOMAD_ALLOC_DIR":   filepath.Join(dir, "alloc"),
		"NOMAD_TASK_DIR":    filepath.Join(dir, "api", "local"),
		"NOMAD_SECRETS_DIR": filepath.Join(dir, "api", "secrets"),
	}
	for k, w := range want {
		if env[k] != w {
			t.Errorf("%s = %q, want %q", k, env[k], w)
		}
	}
}

func TestInterpolateDriverConfig(t *testing.T) {
	cases := []struct {
		name     string
		in, want map[string]any
		taskMeta map[string]string
		taskEnv  map[string]string
	}{
		{name: "command and args",
			taskMeta: map[string]string{"owner": "ops"},
			in: map[string]any{"command": "/bin/${attr.kernel.name}",
				"args": []any{"-c", "echo ${node.unique.name} ${NOMAD_JOB_NAME} $NOMAD_META_owner ${NOMAD_META_owner}"}},
			want: map[string]any{"command": "/bin/linux",
				"args": []any{"-c", "echo node-a Job One $NOMAD_META_owner ops"}}},
		{name: "nested values at any depth; keys and non-strings untouched",
			in: map[string]any{
				"labels": map[string]any{"${node.class}": "${node.datacenter}", "n": 3, "on": true},
				"mounts": []any{map[string]any{"source": "${NOMAD_ALLOC_INDEX}", "list": []any{[]any{"${meta.rack}"}}}},
				"plain":  []string{"${node.pool}"}, "smap": map[string]string{"k": "${NOMAD_GROUP_NAME}"},
				"float": 1.5, "null": nil,
			},
			want: map[string]any{
				"labels": map[string]any{"${node.class}": "dc2", "n": 3, "on": true},
				"mounts": []any{map[string]any{"source": "2", "list": []any{[]any{"r7"}}}},
				"plain":  []string{"batch"}, "smap": map[string]string{"k": "web"},
				"float": 1.5, "null": nil,
			}},
		{name: "the task's env block is visible",
			taskEnv: map[string]string{"GREETING": "hi from ${node.class}"},
			in:      map[string]any{"args": []any{"${GREETING}", "${env.GREETING}"}},
			want:    map[string]any{"args": []any{"hi from small", "hi from small"}}},
		{name: "unknown references are left as written",
			in:   map[string]any{"args": []any{"${MY_SHELL_VAR}", "${attr.nope}", "$${x}"}},
			want: map[string]any{"args": []any{"${MY_SHELL_VAR}", "${attr.nope}", "$${x}"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newEnvFixture(t)
			f.task.Meta, f.task.Env = tc.taskMeta, tc.taskEnv
			before := deepCopyAny(tc.in)
			got := f.build(t).interpolate(tc.in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("config =\n%#v\nwant\n%#v", got, tc.want)
			}
			if !reflect.DeepEqual(tc.in, before) {
				t.Fatalf("the job's config was modified: %#v", tc.in)
			}
		})
	}
}

func deepCopyAny(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopyAny(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopyAny(e)
		}
		return out
	case []string:
		return append([]string(nil), x...)
	case map[string]string:
		out := make(map[string]string, len(x))
		for k, e := range x {
			out[k] = e
		}
		return out
	}
	return v
}

func TestCPUSet(t *testing.T) {
	cases := []struct {
		in   []uint16
		want string
	}{
		{nil, ""}, {[]uint16{3}, "3"}, {[]uint16{0, 1, 2}, "0-2"}, {[]uint16{5, 0, 2, 1}, "0-2,5"},
		{[]uint16{1, 1, 2, 4, 6, 7}, "1-2,4,6-7"},
	}
	for _, tc := range cases {
		if got := cpuSet(tc.in); got != tc.want {
			t.Errorf("cpuSet(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestTaskEnvIsolatedFS: a docker task sees the task directories at
// Nomad's container paths and none of the client's own environment.
func TestTaskEnvIsolatedFS(t *testing.T) {
	t.Setenv("DROVER_TEST_HOST_VAR", "host")
	f := newEnvFixture(t)
	f.task.Driver = "docker"
	env := f.build(t).env
	for k, want := range map[string]string{"NOMAD_ALLOC_DIR": "/alloc", "NOMAD_TASK_DIR": "/local", "NOMAD_SECRETS_DIR": "/secrets"} {
		if env[k] != want {
			t.Errorf("%s = %q, want %q", k, env[k], want)
		}
	}
	if _, ok := env["DROVER_TEST_HOST_VAR"]; ok {
		t.Error("the client's environment reached a docker task")
	}
	f.task.Driver = "raw_exec"
	env = f.build(t).env
	if !strings.HasSuffix(env["NOMAD_TASK_DIR"], "/api/local") || env["DROVER_TEST_HOST_VAR"] != "host" {
		t.Errorf("raw_exec env: task dir %q, host var %q", env["NOMAD_TASK_DIR"], env["DROVER_TEST_HOST_VAR"])
	}
}
