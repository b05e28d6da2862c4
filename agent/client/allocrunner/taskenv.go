package allocrunner

import (
	"net"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/drover-project/drover/agent/client/allocdir"
	"github.com/drover-project/drover/structs"
	"github.com/drover-project/drover/structs/driverspec"
)

// envDenylist lists client environment variables never passed to tasks
// (credentials an agent may hold), as Nomad's default env.denylist.
var envDenylist = map[string]bool{
	"CONSUL_TOKEN": true, "CONSUL_HTTP_TOKEN": true, "CONSUL_HTTP_AUTH": true,
	"VAULT_TOKEN": true, "NOMAD_TOKEN": true, "DROVER_TOKEN": true,
	"AWS_ACCESS_KEY_ID": true, "AWS_SECRET_ACCESS_KEY": true, "AWS_SESSION_TOKEN": true,
	"GOOGLE_APPLICATION_CREDENTIALS": true,
}

// Task variables, as Nomad names them.
const (
	envAllocDir   = "NOMAD_ALLOC_DIR"
	envTaskDir    = "NOMAD_TASK_DIR"
	envSecretsDir = "NOMAD_SECRETS_DIR"
	// envNomadToken carries the workload identity (identity { env = true }).
	envNomadToken   = "NOMAD_TOKEN"
	envAllocID      = "NOMAD_ALLOC_ID"
	envShortAllocID = "NOMAD_SHORT_ALLOC_ID"
	envAllocName    = "NOMAD_ALLOC_NAME"
	envAllocIndex   = "NOMAD_ALLOC_INDEX"
	envGroupName    = "NOMAD_GROUP_NAME"
	envTaskName     = "NOMAD_TASK_NAME"
	envJobID        = "NOMAD_JOB_ID"
	envJobName      = "NOMAD_JOB_NAME"
	envJobParentID  = "NOMAD_JOB_PARENT_ID"
	envDatacenter   = "NOMAD_DC"
	envRegion       = "NOMAD_REGION"
	envNamespace    = "NOMAD_NAMESPACE"
	envCPULimit     = "NOMAD_CPU_LIMIT"
	envCPUCores     = "NOMAD_CPU_CORES"
	envMemLimit     = "NOMAD_MEMORY_LIMIT"
	envMemMaxLimit  = "NOMAD_MEMORY_MAX_LIMIT"
	envMetaPrefix   = "NOMAD_META_"
)

// cleanedPrefixes: variables whose names start with one of these have
// every character outside [A-Za-z0-9_.] replaced by '_', as Nomad does.
var cleanedPrefixes = []string{"NOMAD_ADDR_", "NOMAD_IP_", "NOMAD_PORT_", "NOMAD_HOST_PORT_", envMetaPrefix}

// NodeInfo is what tasks learn about the node they run on: the task
// variables NOMAD_DC and NOMAD_REGION, and the ${node.*}, ${attr.*} and
// ${meta.*} references. The runner only reads it.
type NodeInfo struct {
	ID         string
	Name       string
	Datacenter string
	Region     string
	Class      string
	Pool       string
	Attributes map[string]string
	Meta       map[string]string
	// HostVolumes are the node's host volumes, which the tasks' volume
	// mounts name through their group's volume blocks.
	HostVolumes map[string]*structs.ClientHostVolumeConfig
}

// vars returns the node's interpolation variables by full name:
// node.unique.id, attr.kernel.name, meta.rack, ...
func (n NodeInfo) vars() map[string]string {
	m := make(map[string]string, 6+len(n.Attributes)+len(n.Meta))
	m["node.unique.id"] = n.ID
	m["node.unique.name"] = n.Name
	m["node.datacenter"] = n.Datacenter
	m["node.region"] = n.Region
	m["node.class"] = n.Class
	m["node.pool"] = n.Pool
	for k, v := range n.Attributes {
		m["attr."+k] = v
	}
	for k, v := range n.Meta {
		m["meta."+k] = v
	}
	return m
}

// taskEnv is a task's environment and the node variables; together they
// resolve the task's ${...} references (see interpolate.go).
type taskEnv struct {
	env  map[string]string // the task's complete environment
	node map[string]string // node.*, attr.*, meta.*
}

// buildTaskEnv returns a task's environment, built in layers as Nomad
// builds it; a later layer wins over an earlier one:
//  1. the client's own environment, minus the denylist and NOMAD_* (none
//     for a driver with a file system of its own: driverspec.IsolatedFS);
//  2. the task variables (NOMAD_ALLOC_ID, ...; each only when it has a
//     value) and the port variables (NOMAD_PORT_<label>, ...: portVars);
//  3. NOMAD_META_<key> for the job's, group's and task's meta merged (the
//     task's wins), under the key as written and in upper case, with
//     characters outside [A-Za-z0-9_.] replaced by '_'; values may refer
//     to the node and to the task variables;
//  4. the task's env block, whose values may refer to the node, to the
//     layers above and to each other.
//
// Names the env block gives with a NOMAD_META_ (or port) prefix are
// cleaned as meta keys are. The result is deterministic: it does not
// depend on map order.
func buildTaskEnv(alloc *structs.Allocation, tg *structs.TaskGroup, task *structs.Task,
	ad *allocdir.AllocDir, td *allocdir.TaskDir, node NodeInfo) *taskEnv {
	te := &taskEnv{env: make(map[string]string), node: node.vars()}
	// A task in an image of its own keeps the image's environment (its
	// PATH, ...): the client's does not reach it, as in Nomad.
	var hostEnv []string
	if !driverspec.IsolatedFS(task.Driver) {
		hostEnv = os.Environ()
	}
	for _, kv := range hostEnv {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || envDenylist[k] || strings.HasPrefix(k, "NOMAD_") {
			continue
		}
		te.env[k] = v
	}
	for k, v := range taskVars(alloc, tg, task, ad, td, node) {
		if v != "" {
			te.env[k] = v
		}
	}
	putCleaned(te.env, portVars(alloc, task))
	meta := mergedMeta(alloc.Job, tg, task)
	upper := make(map[string]string, len(meta))
	asWritten := make(map[string]string, len(meta))
	for _, k := range sortedKeys(meta) {
		v := te.replace(meta[k], te.lookupEnv)
		upper[envMetaPrefix+strings.ToUpper(k)] = v
		asWritten[envMetaPrefix+k] = v
	}
	// Upper-case names first, so that a key written in upper case wins
	// over another key that only upper-cases to it.
	putCleaned(te.env, upper)
	putCleaned(te.env, asWritten)
	te.setTaskEnv(task.Env)
	return te
}

// taskVars returns the task variables (empty values are left out by the
// caller). NOMAD_REGION is the client's region, or the job's when the
// client has none.
func taskVars(alloc *structs.Allocation, tg *structs.TaskGroup, task *structs.Task,
	ad *allocdir.AllocDir, td *allocdir.TaskDir, node NodeInfo) map[string]string {
	job := alloc.Job
	if job == nil {
		job = &structs.Job{}
	}
	region := node.Region
	if region == "" {
		region = job.Region
	}
	namespace := alloc.Namespace
	if namespace == "" {
		namespace = job.Namespace
	}
	jobID := alloc.JobID
	if jobID == "" {
		jobID = job.ID
	}
	res := taskResources(alloc, task)
	allocDir, taskDir, secretsDir := ad.SharedDir, td.LocalDir, td.SecretsDir
	if driverspec.IsolatedFS(task.Driver) { // the directories are mounted at Nomad's paths
		allocDir, taskDir, secretsDir = driverspec.IsolatedAllocDir, driverspec.IsolatedLocalDir, driverspec.IsolatedSecretsDir
	}
	vars := map[string]string{
		envAllocDir: allocDir, envTaskDir: taskDir, envSecretsDir: secretsDir,
		envAllocID: alloc.ID, envShortAllocID: shortID(alloc.ID), envAllocName: alloc.Name,
		envAllocIndex: strconv.Itoa(allocIndex(alloc.Name)),
		envGroupName:  tg.Name, envTaskName: task.Name,
		envJobID: jobID, envJobName: job.Name,
		envDatacenter: node.Datacenter, envRegion: region, envNamespace: namespace,
		envCPUCores: cpuSet(res.Cpu.ReservedCores),
		// Drover's own additions (Nomad offers these only as ${node.*}).
		"NOMAD_NODE_ID": node.ID, "NOMAD_NODE_NAME": node.Name, "NOMAD_NODE_CLASS": node.Class,
	}
	if job.ParentID != "" { // periodic and dispatched children
		vars[envJobParentID] = job.ParentID
	}
	for name, n := range map[string]int64{envCPULimit: res.Cpu.CpuShares,
		envMemLimit: res.Memory.MemoryMB, envMemMaxLimit: res.Memory.MemoryMaxMB} {
		if n != 0 {
			vars[name] = strconv.FormatInt(n, 10)
		}
	}
	return vars
}

// Port variables, as Nomad names them.
const (
	envAddrPrefix      = "NOMAD_ADDR_"
	envHostAddrPrefix  = "NOMAD_HOST_ADDR_"
	envIPPrefix        = "NOMAD_IP_"
	envHostIPPrefix    = "NOMAD_HOST_IP_"
	envPortPrefix      = "NOMAD_PORT_"
	envAllocPortPrefix = "NOMAD_ALLOC_PORT_"
	envHostPortPrefix  = "NOMAD_HOST_PORT_"
)

// portVars returns the variables for the allocation's ports, as Nomad
// sets them (nil when it has none):
//   - for each group port: NOMAD_IP_<label> and NOMAD_HOST_IP_<label> (the
//     host address), NOMAD_HOST_PORT_<label> (the port on the host),
//     NOMAD_ADDR_<label> and NOMAD_HOST_ADDR_<label> (address:port), and
//     NOMAD_PORT_<label> and NOMAD_ALLOC_PORT_<label>: the port's to when it
//     has one, else the host port;
//   - for each port of the task's own legacy network: NOMAD_IP_<label>,
//     NOMAD_IPv4_<label> (or IPv6), NOMAD_HOST_PORT_<label>,
//     NOMAD_ADDR_<label> and NOMAD_PORT_<label> (the host port);
//   - for each port of another task's legacy network:
//     NOMAD_ADDR_<task>_<label>, NOMAD_IP_<task>_<label> and
//     NOMAD_PORT_<task>_<label>.
func portVars(alloc *structs.Allocation, task *structs.Task) map[string]string {
	ar := alloc.AllocatedResources
	if ar == nil || !alloc.HasPorts() {
		return nil
	}
	vars := map[string]string{}
	for _, name := range sortedTaskNames(ar.Tasks) {
		for _, n := range ar.Tasks[name].Networks {
			for _, list := range [][]structs.Port{n.ReservedPorts, n.DynamicPorts} {
				for _, p := range list {
					port := strconv.Itoa(p.Value)
					if name != task.Name {
						vars[envAddrPrefix+name+"_"+p.Label] = net.JoinHostPort(n.IP, port)
						vars[envIPPrefix+name+"_"+p.Label] = n.IP
						vars[envPortPrefix+name+"_"+p.Label] = port
						continue
					}
					family := "NOMAD_IPv4_"
					if strings.Contains(n.IP, ":") {
						family = "NOMAD_IPv6_"
					}
					vars[envIPPrefix+p.Label] = n.IP
					vars[family+p.Label] = n.IP
					vars[envHostPortPrefix+p.Label] = port
					vars[envAddrPrefix+p.Label] = net.JoinHostPort(n.IP, port)
					vars[envPortPrefix+p.Label] = port
				}
			}
		}
	}
	for _, p := range ar.Shared.Ports {
		host := strconv.Itoa(p.Value)
		inside := host
		if p.To > 0 {
			inside = strconv.Itoa(p.To)
		}
		vars[envAddrPrefix+p.Label] = net.JoinHostPort(p.HostIP, host)
		vars[envHostAddrPrefix+p.Label] = net.JoinHostPort(p.HostIP, host)
		vars[envIPPrefix+p.Label] = p.HostIP
		vars[envHostIPPrefix+p.Label] = p.HostIP
		vars[envPortPrefix+p.Label] = inside
		vars[envAllocPortPrefix+p.Label] = inside
		vars[envHostPortPrefix+p.Label] = host
	}
	return vars
}

func sortedTaskNames(m map[string]*structs.AllocatedTaskResources) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// setTaskEnv adds the task's env block. A value may refer to any variable
// of the environment, including another entry of the block (resolved
// first, whatever the order); a reference back to an entry being resolved
// (PATH = "${PATH}:/opt/bin") sees the value from the layers below. Names
// are cleaned (cleanEnvName) as they are added.
func (te *taskEnv) setTaskEnv(block map[string]string) {
	below := te.env
	done := make(map[string]string, len(block))
	busy := map[string]bool{}
	var resolve func(name string) (string, bool)
	resolve = func(name string) (string, bool) {
		if v, ok := done[name]; ok {
			return v, true
		}
		raw, inBlock := block[name]
		if !inBlock || busy[name] {
			v, ok := below[name]
			return v, ok
		}
		busy[name] = true
		v := te.replace(raw, resolve)
		busy[name] = false
		done[name] = v
		return v, true
	}
	for _, k := range sortedKeys(block) {
		resolve(k)
	}
	env := make(map[string]string, len(below)+len(done))
	for k, v := range below {
		env[k] = v
	}
	putCleaned(env, done)
	te.env = env
}

// mergedMeta merges the job's, group's and task's meta; the more specific
// wins.
func mergedMeta(job *structs.Job, tg *structs.TaskGroup, task *structs.Task) map[string]string {
	m := map[string]string{}
	if job != nil {
		for k, v := range job.Meta {
			m[k] = v
		}
	}
	for k, v := range tg.Meta {
		m[k] = v
	}
	for k, v := range task.Meta {
		m[k] = v
	}
	return m
}

// putCleaned copies src into dst under cleaned names (cleanEnvName). Of
// two names that clean to the same one, the one written clean wins; the
// result never depends on map order.
func putCleaned(dst, src map[string]string) {
	for _, k := range sortedKeys(src) {
		if c := cleanEnvName(k); c != k {
			dst[c] = src[k]
		}
	}
	for k, v := range src {
		if cleanEnvName(k) == k {
			dst[k] = v
		}
	}
}

// cleanEnvName replaces, in names with one of cleanedPrefixes, every
// character outside [A-Za-z0-9_.] by '_'. Other names are returned as
// they are.
func cleanEnvName(name string) string {
	for _, p := range cleanedPrefixes {
		if strings.HasPrefix(name, p) {
			return strings.Map(func(r rune) rune {
				switch {
				case r == '_' || r == '.', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
					return r
				}
				return '_'
			}, name)
		}
	}
	return name
}

// taskResources returns what the allocation reserved for the task, or
// the task's own ask when the allocation does not say.
func taskResources(alloc *structs.Allocation, task *structs.Task) structs.AllocatedTaskResources {
	if ar := alloc.AllocatedResources; ar != nil {
		if tr := ar.Tasks[task.Name]; tr != nil {
			return *tr
		}
	}
	var out structs.AllocatedTaskResources
	if task.Resources != nil {
		out.Cpu.CpuShares = int64(task.Resources.CPU)
		out.Memory.MemoryMB = int64(task.Resources.MemoryMB)
	}
	return out
}

// cpuSet writes cores as Linux cpuset lists do: "0-2,5" ("" for none).
func cpuSet(cores []uint16) string {
	if len(cores) == 0 {
		return ""
	}
	c := append([]uint16(nil), cores...)
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	var parts []string
	for i := 0; i < len(c); {
		j := i
		for j+1 < len(c) && c[j+1] <= c[j]+1 {
			j++
		}
		if c[i] == c[j] {
			parts = append(parts, strconv.Itoa(int(c[i])))
		} else {
			parts = append(parts, strconv.Itoa(int(c[i]))+"-"+strconv.Itoa(int(c[j])))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
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

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
