package allocrunner

import (
	"os"
	"strconv"
	"strings"

	"github.com/drover-project/drover/agent/client/allocdir"
	"github.com/drover-project/drover/structs"
)

// envDenylist lists client environment variables never passed to tasks
// (credentials an agent may hold), as Nomad's default env.denylist.
var envDenylist = map[string]bool{
	"CONSUL_TOKEN": true, "CONSUL_HTTP_TOKEN": true, "CONSUL_HTTP_AUTH": true,
	"VAULT_TOKEN": true, "NOMAD_TOKEN": true, "DROVER_TOKEN": true,
	"AWS_ACCESS_KEY_ID": true, "AWS_SECRET_ACCESS_KEY": true, "AWS_SESSION_TOKEN": true,
	"GOOGLE_APPLICATION_CREDENTIALS": true,
}

// NodeInfo is what tasks learn about the node they run on.
type NodeInfo struct {
	ID         string
	Name       string
	Datacenter string
	Region     string
	Class      string
}

// buildEnv returns a task's environment: the client's own (minus the
// denylist), then the task variables (NOMAD_*), then the task's env block,
// which wins over both, as in Nomad.
func buildEnv(alloc *structs.Allocation, tg *structs.TaskGroup, task *structs.Task,
	ad *allocdir.AllocDir, td *allocdir.TaskDir, node NodeInfo) map[string]string {
	env := make(map[string]string)
	for _, kv := range os.Environ() {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || envDenylist[k] || strings.HasPrefix(k, "NOMAD_") {
			continue
		}
		env[k] = v
	}
	job := alloc.Job
	set := func(k, v string) { env[k] = v }
	set("NOMAD_ALLOC_ID", alloc.ID)
	set("NOMAD_SHORT_ALLOC_ID", shortID(alloc.ID))
	set("NOMAD_ALLOC_NAME", alloc.Name)
	set("NOMAD_ALLOC_INDEX", strconv.Itoa(allocIndex(alloc.Name)))
	set("NOMAD_TASK_NAME", task.Name)
	set("NOMAD_GROUP_NAME", tg.Name)
	set("NOMAD_JOB_ID", alloc.JobID)
	set("NOMAD_NAMESPACE", alloc.Namespace)
	if job != nil {
		set("NOMAD_JOB_NAME", job.Name)
		set("NOMAD_REGION", job.Region)
		if job.Namespace != "" {
			set("NOMAD_NAMESPACE", job.Namespace)
		}
	}
	if env["NOMAD_REGION"] == "" {
		set("NOMAD_REGION", node.Region)
	}
	set("NOMAD_DC", node.Datacenter)
	set("NOMAD_NODE_ID", node.ID)
	set("NOMAD_NODE_NAME", node.Name)
	set("NOMAD_NODE_CLASS", node.Class)
	set("NOMAD_ALLOC_DIR", ad.SharedDir)
	set("NOMAD_TASK_DIR", td.LocalDir)
	set("NOMAD_SECRETS_DIR", td.SecretsDir)
	cpu, mem := taskLimits(alloc, task)
	set("NOMAD_CPU_LIMIT", strconv.FormatInt(cpu, 10))
	set("NOMAD_MEMORY_LIMIT", strconv.FormatInt(mem, 10))
	if job != nil {
		for k, v := range job.Meta {
			set("NOMAD_META_"+metaKey(k), v)
		}
	}
	for k, v := range tg.Meta {
		set("NOMAD_META_"+metaKey(k), v)
	}
	for k, v := range task.Meta {
		set("NOMAD_META_"+metaKey(k), v)
	}
	for k, v := range task.Env {
		set(k, v)
	}
	return env
}

// taskLimits returns the task's CPU (MHz) and memory (MB) allocation.
func taskLimits(alloc *structs.Allocation, task *structs.Task) (int64, int64) {
	if ar := alloc.AllocatedResources; ar != nil {
		if tr := ar.Tasks[task.Name]; tr != nil {
			return tr.Cpu.CpuShares, tr.Memory.MemoryMB
		}
	}
	if task.Resources != nil {
		return int64(task.Resources.CPU), int64(task.Resources.MemoryMB)
	}
	return 0, 0
}

// allocIndex parses the index out of "job.group[3]" (0 if absent).
func allocIndex(name string) int {
	l := strings.LastIndexByte(name, '[')
	if l < 0 || !strings.HasSuffix(name, "]") {
		return 0
	}
	n, err := strconv.Atoi(name[l+1 : len(name)-1])
	if err != nil {
		return 0
	}
	return n
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// metaKey makes a meta key usable in a variable name, as Nomad does.
func metaKey(k string) string {
	return strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(k))
}
