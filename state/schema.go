package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/structs"
)

// Table names. The index table records, per table, the Raft index of the
// last write that touched it.
const (
	TableIndex      = "index"
	TableJobs       = "jobs"
	TableJobSummary = "job_summary"
	TableNodes      = "nodes"
	TableEvals      = "evals"
	// TableAllocs has one row, which holds every allocation in two
	// persistent trees, and a third with the per-node rows derived from
	// the nodes and allocations (alloc_tables.go, node_allocs.go).
	TableAllocs = "allocs"
	// ACL tables (acl.go): policies by name, tokens by accessor (and by
	// the hash of their secret), and the one row of the servers'
	// internal credential.
	TableACLPolicies = "acl_policy"
	TableACLTokens   = "acl_token"
	TableACLCluster  = "acl_cluster"
	// TableVariables holds variables, encrypted, by (namespace, path);
	// TableRootKeys the keyring's metadata by key ID (variables.go).
	TableVariables = "variables"
	TableRootKeys  = "root_keys"
	// TableServiceRegs holds the native service registrations
	// (services.go), by ID, by (namespace, service name), allocation,
	// (namespace, job) and node.
	TableServiceRegs = "service_registrations"
	// TableJobVersions keeps the last versions of every job, the current
	// one included, by (namespace, job, version) (job_versions.go).
	TableJobVersions = "job_version"
	// TableScalingEvents keeps each job's recent scaling events, one row
	// per job (scaling_events.go).
	TableScalingEvents = "scaling_event"
	// TablePeriodicLaunch holds each periodic job's last launch
	// (periodic.go).
	TablePeriodicLaunch = "periodic_launch"
	// TableSchedulerConfig holds the one row of the scheduler
	// configuration (scheduler_config.go).
	TableSchedulerConfig = "scheduler_config"
	// TableNodePools holds the node pools other than the built-in ones,
	// by name (node_pools.go).
	TableNodePools = "node_pools"
	// TableDeployments holds deployments by ID and by (namespace, job)
	// (deployments.go).
	TableDeployments = "deployment"
	// TableNodeQuarantine holds, by node ID, the recent node faults and
	// the quarantine of nodes that have any (node_quarantine.go).
	TableNodeQuarantine = "node_quarantine"
	// Autoscaling node pools (pool_autoscale.go): each pool's autoscaler
	// configuration by pool; the instances the leader created, by ID and
	// by pool; each pool's events and quota back-off, by pool.
	TablePoolAutoscalers    = "pool_autoscaler"
	TablePoolInstances      = "pool_instance"
	TablePoolAutoscaleStats = "pool_autoscale_status"
)

// Index names. Append "_prefix" to an index that supports it for a prefix
// scan (memdb convention), e.g. IndexID + PrefixSuffix.
const (
	IndexID   = "id"
	IndexJob  = "job"
	IndexNode = "node"
	// IndexSecret indexes ACL tokens by structs.SecretKey of their
	// secret's hash.
	IndexSecret = "secret"
	// Service registration indexes.
	IndexServiceName = "service_name"
	// IndexPeriodic indexes the jobs table's periodic jobs only.
	IndexPeriodic = "periodic"
	// IndexPool indexes pool instances by their node pool.
	IndexPool = "pool"

	prefixSuffix = "_prefix"
)

// Tables lists every table in the order snapshots write them.
var Tables = []string{TableIndex, TableNodes, TableJobs, TableJobSummary, TableEvals, TableAllocs,
	TableACLPolicies, TableACLTokens, TableACLCluster, TableVariables, TableRootKeys, TableServiceRegs, TableJobVersions, TableScalingEvents, TablePeriodicLaunch, TableSchedulerConfig, TableNodePools, TableDeployments,
	TablePoolAutoscalers, TablePoolInstances, TablePoolAutoscaleStats, TableNodeQuarantine}

// IndexEntry is a row of the index table: the Raft index of the last write
// to table Key.
type IndexEntry struct {
	Key   string
	Value uint64
}

// fieldIndex indexes objects of type T by one string field, read through
// get (no reflection: restores insert hundreds of thousands of rows). An
// empty value is not indexed. It supports exact and prefix lookups.
type fieldIndex[T any] struct {
	get func(*T) string
	// spare, if set, is how many bytes memdb will append to the key (the
	// primary key, on a non-unique index): the key is allocated with room
	// for them, which saves memdb a copy per insert.
	spare func(*T) int
}

func (f fieldIndex[T]) FromObject(obj any) (bool, []byte, error) {
	o, ok := obj.(*T)
	if !ok {
		return false, nil, fmt.Errorf("state: index expects %T, got %T", (*T)(nil), obj)
	}
	v := f.get(o)
	if v == "" {
		return false, nil, nil
	}
	extra := 0
	if f.spare != nil {
		extra = f.spare(o)
	}
	return true, appendTerminated(make([]byte, 0, len(v)+1+extra), v), nil
}

func (f fieldIndex[T]) FromArgs(args ...any) ([]byte, error) { return oneKeyArg(args) }

// oneKeyArg is the lookup key of a one-string index: the string,
// NUL-terminated.
func oneKeyArg(args []any) ([]byte, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("state: index takes one argument, got %d", len(args))
	}
	switch v := args[0].(type) {
	case string:
		return terminated(v), nil
	}
	return nil, fmt.Errorf("state: index argument must be a string, got %T", args[0])
}

func (f fieldIndex[T]) PrefixFromArgs(args ...any) ([]byte, error) {
	b, err := f.FromArgs(args...)
	if err != nil {
		return nil, err
	}
	return b[:len(b)-1], nil
}

// pairIndex indexes objects of type T by (namespace, field); both must be
// set. Exact lookups take two arguments; prefix lookups take the namespace
// and a prefix of the field.
type pairIndex[T any] struct {
	get   func(*T) (namespace, field string)
	spare func(*T) int // as in fieldIndex
}

func (p pairIndex[T]) FromObject(obj any) (bool, []byte, error) {
	o, ok := obj.(*T)
	if !ok {
		return false, nil, fmt.Errorf("state: index expects %T, got %T", (*T)(nil), obj)
	}
	ns, v := p.get(o)
	if ns == "" || v == "" {
		return false, nil, nil
	}
	extra := 0
	if p.spare != nil {
		extra = p.spare(o)
	}
	return true, appendTerminated(appendTerminated(make([]byte, 0, len(ns)+len(v)+2+extra), ns), v), nil
}

func (p pairIndex[T]) FromArgs(args ...any) ([]byte, error) {
	ns, v, err := twoStrings(args)
	if err != nil {
		return nil, err
	}
	return pair(ns, v), nil
}

func (p pairIndex[T]) PrefixFromArgs(args ...any) ([]byte, error) {
	if len(args) == 1 {
		ns, ok := args[0].(string)
		if !ok {
			return nil, fmt.Errorf("state: index argument must be a string, got %T", args[0])
		}
		return terminated(ns), nil
	}
	b, err := p.FromArgs(args...)
	if err != nil {
		return nil, err
	}
	return b[:len(b)-1], nil
}

func twoStrings(args []any) (string, string, error) {
	if len(args) != 2 {
		return "", "", fmt.Errorf("state: index takes two arguments, got %d", len(args))
	}
	a, ok1 := args[0].(string)
	b, ok2 := args[1].(string)
	if !ok1 || !ok2 {
		return "", "", fmt.Errorf("state: index arguments must be strings, got %T, %T", args[0], args[1])
	}
	return a, b, nil
}

func appendTerminated(b []byte, v string) []byte {
	return append(append(b, v...), 0)
}

func terminated(v string) []byte {
	b := make([]byte, len(v)+1)
	copy(b, v)
	return b
}

func pair(a, b string) []byte {
	out := make([]byte, len(a)+len(b)+2)
	copy(out, a)
	copy(out[len(a)+1:], b)
	return out
}

// Length of the primary key, which memdb appends to non-unique index keys.
func evalKeyLen(e *structs.Evaluation) int { return len(e.ID) + 1 }

func schema() *memdb.DBSchema {
	return &memdb.DBSchema{Tables: map[string]*memdb.TableSchema{
		TableIndex: {
			Name: TableIndex,
			Indexes: map[string]*memdb.IndexSchema{
				IndexID: {Name: IndexID, Unique: true, Indexer: fieldIndex[IndexEntry]{get: func(e *IndexEntry) string { return e.Key }}},
			},
		},
		TableJobs: {
			Name: TableJobs,
			Indexes: map[string]*memdb.IndexSchema{
				IndexID:       {Name: IndexID, Unique: true, Indexer: pairIndex[structs.Job]{get: func(j *structs.Job) (string, string) { return j.Namespace, j.ID }}},
				IndexPeriodic: {Name: IndexPeriodic, Unique: true, AllowMissing: true, Indexer: fieldIndex[structs.Job]{get: periodicKey}},
			},
		},
		TablePeriodicLaunch: {
			Name: TablePeriodicLaunch,
			Indexes: map[string]*memdb.IndexSchema{
				IndexID: {Name: IndexID, Unique: true, Indexer: pairIndex[structs.PeriodicLaunch]{get: func(l *structs.PeriodicLaunch) (string, string) { return l.Namespace, l.ID }}},
			},
		},
		TableJobSummary: {
			Name: TableJobSummary,
			Indexes: map[string]*memdb.IndexSchema{
				IndexID: {Name: IndexID, Unique: true, Indexer: pairIndex[structs.JobSummary]{get: func(j *structs.JobSummary) (string, string) { return j.Namespace, j.JobID }}},
			},
		},
		TableNodes: {
			Name: TableNodes,
			Indexes: map[string]*memdb.IndexSchema{
				IndexID: {Name: IndexID, Unique: true, Indexer: fieldIndex[structs.Node]{get: func(n *structs.Node) string { return n.ID }}},
			},
		},
		TableEvals: {
			Name: TableEvals,
			Indexes: map[string]*memdb.IndexSchema{
				IndexID: {Name: IndexID, Unique: true,
					Indexer: fieldIndex[structs.Evaluation]{get: func(e *structs.Evaluation) string { return e.ID }}},
				IndexJob: {Name: IndexJob, AllowMissing: true,
					Indexer: pairIndex[structs.Evaluation]{get: func(e *structs.Evaluation) (string, string) { return e.Namespace, e.JobID }, spare: evalKeyLen}},
			},
		},
		TableACLPolicies: {
			Name: TableACLPolicies,
			Indexes: map[string]*memdb.IndexSchema{
				IndexID: {Name: IndexID, Unique: true, Indexer: fieldIndex[structs.ACLPolicy]{get: func(p *structs.ACLPolicy) string { return p.Name }}},
			},
		},
		TableACLTokens: {
			Name: TableACLTokens,
			Indexes: map[string]*memdb.IndexSchema{
				IndexID: {Name: IndexID, Unique: true, Indexer: fieldIndex[structs.ACLToken]{get: func(t *structs.ACLToken) string { return t.AccessorID }}},
				IndexSecret: {Name: IndexSecret, Unique: true,
					Indexer: fieldIndex[structs.ACLToken]{get: func(t *structs.ACLToken) string { return structs.SecretKey(t.SecretHash) }}},
			},
		},
		TableACLCluster: {
			Name: TableACLCluster,
			Indexes: map[string]*memdb.IndexSchema{
				IndexID: {Name: IndexID, Unique: true, Indexer: fieldIndex[structs.ACLClusterSecret]{get: func(*structs.ACLClusterSecret) string { return aclClusterKey }}},
			},
		},
		TableSchedulerConfig: {
			Name: TableSchedulerConfig,
			Indexes: map[string]*memdb.IndexSchema{
				IndexID: {Name: IndexID, Unique: true, Indexer: fieldIndex[structs.SchedulerConfiguration]{get: func(*structs.SchedulerConfiguration) string { return schedulerConfigKey }}},
			},
		},
		TableNodeQuarantine: {
			Name: TableNodeQuarantine,
			Indexes: map[string]*memdb.IndexSchema{
				IndexID: {Name: IndexID, Unique: true, Indexer: fieldIndex[structs.NodeQuarantine]{get: func(q *structs.NodeQuarantine) string { return q.NodeID }}},
			},
		},
		TableNodePools: {
			Name: TableNodePools,
			Indexes: map[string]*memdb.IndexSchema{
				IndexID: {Name: IndexID, Unique: true, Indexer: fieldIndex[structs.NodePool]{get: func(p *structs.NodePool) string { return p.Name }}},
			},
		},
		TableVariables: {
			Name: TableVariables,
			Indexes: map[string]*memdb.IndexSchema{
				IndexID: {Name: IndexID, Unique: true, Indexer: pairIndex[structs.VariableEncrypted]{get: func(v *structs.VariableEncrypted) (string, string) { return v.Namespace, v.Path }}},
			},
		},
		TableRootKeys: {
			Name: TableRootKeys,
			Indexes: map[string]*memdb.IndexSchema{
				IndexID: {Name: IndexID, Unique: true, Indexer: fieldIndex[structs.RootKeyMeta]{get: func(k *structs.RootKeyMeta) string { return k.KeyID }}},
			},
		},
		TableServiceRegs: {
			Name: TableServiceRegs,
			Indexes: map[string]*memdb.IndexSchema{
				IndexID:          {Name: IndexID, Unique: true, Indexer: fieldIndex[structs.ServiceRegistration]{get: func(r *structs.ServiceRegistration) string { return r.ID }}},
				IndexServiceName: {Name: IndexServiceName, Indexer: pairIndex[structs.ServiceRegistration]{get: func(r *structs.ServiceRegistration) (string, string) { return r.Namespace, r.ServiceName }}},
			},
		},
		TableJobVersions: {
			Name: TableJobVersions,
			Indexes: map[string]*memdb.IndexSchema{
				IndexID: {Name: IndexID, Unique: true, Indexer: jobVersionIndex{}},
			},
		},
		TableScalingEvents: {
			Name: TableScalingEvents,
			Indexes: map[string]*memdb.IndexSchema{
				IndexID: {Name: IndexID, Unique: true, Indexer: pairIndex[structs.JobScalingEvents]{get: func(e *structs.JobScalingEvents) (string, string) { return e.Namespace, e.JobID }}},
			},
		},
		TablePoolAutoscalers: {
			Name: TablePoolAutoscalers,
			Indexes: map[string]*memdb.IndexSchema{
				IndexID: {Name: IndexID, Unique: true, Indexer: fieldIndex[structs.PoolAutoscaler]{get: func(a *structs.PoolAutoscaler) string { return a.Pool }}},
			},
		},
		TablePoolInstances: {
			Name: TablePoolInstances,
			Indexes: map[string]*memdb.IndexSchema{
				IndexID:   {Name: IndexID, Unique: true, Indexer: fieldIndex[structs.PoolInstance]{get: func(i *structs.PoolInstance) string { return i.ID }}},
				IndexPool: {Name: IndexPool, Indexer: fieldIndex[structs.PoolInstance]{get: func(i *structs.PoolInstance) string { return i.Pool }}},
			},
		},
		TablePoolAutoscaleStats: {
			Name: TablePoolAutoscaleStats,
			Indexes: map[string]*memdb.IndexSchema{
				IndexID: {Name: IndexID, Unique: true, Indexer: fieldIndex[structs.PoolAutoscaleStatus]{get: func(s *structs.PoolAutoscaleStatus) string { return s.Pool }}},
			},
		},
		TableDeployments: {
			Name: TableDeployments,
			Indexes: map[string]*memdb.IndexSchema{
				IndexID: {Name: IndexID, Unique: true, Indexer: fieldIndex[structs.Deployment]{get: func(d *structs.Deployment) string { return d.ID }}},
				IndexJob: {Name: IndexJob,
					Indexer: pairIndex[structs.Deployment]{get: func(d *structs.Deployment) (string, string) { return d.Namespace, d.JobID }, spare: deploymentKeyLen}},
			},
		},
		TableAllocs: {
			Name: TableAllocs,
			Indexes: map[string]*memdb.IndexSchema{
				IndexID: {Name: IndexID, Unique: true, Indexer: fieldIndex[allocTables]{get: func(*allocTables) string { return allocTablesKey }}},
			},
		},
	}}
}

func init() {
	if err := schema().Validate(); err != nil {
		panic(fmt.Sprintf("state: invalid schema: %v", err))
	}
}
