package server

import (
	"fmt"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/structs"
)

// ACL enforcement of RPC methods. Every method the server registers has
// exactly one rule in rpcACLRules (setupRPC fails otherwise). With ACLs
// enabled, the dispatcher (Server.RPC for in-process calls, rpcCall.serve
// for remote ones) calls authorizeRPC before the method runs and, for
// reads whose objects name their namespace, filterRPCReply after.
//
// The check runs on every server a request passes through, each against
// its own state: a server that forwards a request checks it and passes the
// caller's token along (never a decision); the server that serves it
// resolves the token again (CVE-2023-1782 was a leader trusting a
// follower's decision). Namespaces are matched exactly or by the glob
// rules of acl.ACL, never by prefix of a job or other ID.

// aclClass says who may call a method.
type aclClass uint8

const (
	// aclUser: ACL tokens (and the anonymous token), per allow.
	aclUser aclClass = iota
	// aclOpen: anyone, as in Nomad (status leader and peers, ACL
	// bootstrap, server discovery; see the notes in rpcACLRules).
	aclOpen
	// aclNodeSecret: client agents, authenticated by their node's
	// SecretID, which the node endpoints check (branch h-tls). Here a
	// request carrying a user ACL token, or none, is refused unless the
	// token is a management token; another secret is passed on to that
	// check.
	aclNodeSecret
	// aclServer: scheduler-internal calls between servers: the cluster
	// secret (or a management token).
	aclServer
	// aclNodeOrUser: an ACL token, judged by allow, or a secret that is
	// no token (a node's SecretID), passed on to the endpoint's own
	// node-secret check (ServiceRegistration.DeleteByID).
	aclNodeOrUser
)

// aclRule is the rule of one RPC method.
type aclRule struct {
	class aclClass
	// allow decides an aclUser call from its arguments (nil: any
	// resolved token, the endpoint checks the rest itself).
	allow func(a *acl.ACL, s *Server, args any) bool
	// filter, if set, checks or trims a read's answer by the namespaces
	// of the objects in it; false refuses the whole answer.
	filter func(a *acl.ACL, reply any) bool
}

// rpcACLRules is the one table of who may call what.
var rpcACLRules = map[string]aclRule{
	// Status: leader and peers need no token in Nomad. Announce is the
	// servers' discovery (Nomad's gossip, which ACLs do not cover either):
	// open, restricted by certificate where TLS is on (branch h-tls).
	"Status.Leader":   {class: aclOpen},
	"Status.Peers":    {class: aclOpen},
	"Status.Announce": {class: aclOpen},
	// Members lists the servers, as Peers does; the agent checks node
	// read for /v1/agent/members itself.
	"Status.Members": {class: aclOpen},

	"Job.Register":       {allow: jobNamespaceCap(acl.NamespaceCapabilitySubmitJob)},
	"Job.Plan":           {allow: jobNamespaceCap(acl.NamespaceCapabilitySubmitJob)},
	"Job.Validate":       {allow: nsCap(acl.NamespaceCapabilityReadJob)},
	"Job.Deregister":     {allow: nsCap(acl.NamespaceCapabilitySubmitJob)},
	"Job.GetJob":         {allow: nsCap(acl.NamespaceCapabilityReadJob)},
	"Job.List":           {allow: nsCap(acl.NamespaceCapabilityListJobs)},
	"Job.Allocations":    {allow: nsCap(acl.NamespaceCapabilityReadJob)},
	"Job.Evaluations":    {allow: nsCap(acl.NamespaceCapabilityReadJob)},
	"Job.Summary":        {allow: nsCap(acl.NamespaceCapabilityReadJob)},
	"Job.GetJobVersions": {allow: nsCap(acl.NamespaceCapabilityReadJob)},
	"Job.Revert":         {allow: nsCap(acl.NamespaceCapabilitySubmitJob)},
	"Job.Stable":         {allow: nsCap(acl.NamespaceCapabilitySubmitJob)},
	// As Nomad: scaling needs scale-job or submit-job; its status
	// read-job-scaling or read-job.
	"Job.Scale":       {allow: nsAnyCap(acl.NamespaceCapabilityScaleJob, acl.NamespaceCapabilitySubmitJob)},
	"Job.ScaleStatus": {allow: nsAnyCap(acl.NamespaceCapabilityReadJobScaling, acl.NamespaceCapabilityReadJob)},
	// Scaling policies: list-scaling-policies or list-jobs; one policy
	// read-scaling-policy or read-job.
	"Scaling.ListPolicies": {allow: nsAnyCap(acl.NamespaceCapabilityListScalingPolicies, acl.NamespaceCapabilityListJobs)},
	"Scaling.GetPolicy":    {allow: nsAnyCap(acl.NamespaceCapabilityReadScalingPolicy, acl.NamespaceCapabilityReadJob)},
	// Deployments, as in Nomad: reads need read-job, changes submit-job.
	"Deployment.List":           {allow: nsCap(acl.NamespaceCapabilityReadJob)},
	"Deployment.GetDeployment":  {allow: nsCap(acl.NamespaceCapabilityReadJob)},
	"Deployment.Allocations":    {allow: nsCap(acl.NamespaceCapabilityReadJob)},
	"Deployment.Promote":        {allow: nsCap(acl.NamespaceCapabilitySubmitJob)},
	"Deployment.Fail":           {allow: nsCap(acl.NamespaceCapabilitySubmitJob)},
	"Deployment.Pause":          {allow: nsCap(acl.NamespaceCapabilitySubmitJob)},
	"Deployment.SetAllocHealth": {allow: nsCap(acl.NamespaceCapabilitySubmitJob)},
	"Job.Deployments":           {allow: nsCap(acl.NamespaceCapabilityReadJob)},
	"Job.LatestDeployment":      {allow: nsCap(acl.NamespaceCapabilityReadJob)},
	// Periodic force needs submit-job, as in Nomad.
	"Job.PeriodicForce": {allow: nsCap(acl.NamespaceCapabilitySubmitJob)},
	// Dispatch needs dispatch-job, as in Nomad.
	"Job.Dispatch": {allow: nsCap(acl.NamespaceCapabilityDispatchJob)},

	"Node.Register":          {class: aclNodeSecret},
	"Node.UpdateStatus":      {class: aclNodeSecret},
	"Node.UpdateAlloc":       {class: aclNodeSecret},
	"Node.GetClientAllocs":   {class: aclNodeSecret},
	"Node.UpdateDrain":       {allow: nodeWrite},
	"Node.UpdateEligibility": {allow: nodeWrite},
	// Node pools: Drover's ACLs have no node_pool rules (Nomad's); reading
	// pools and their nodes needs node read, writing them a management
	// token, listing a pool's jobs list-jobs in the namespace.
	"NodePool.List":            {allow: nodeRead},
	"NodePool.GetNodePool":     {allow: nodeRead},
	"NodePool.ListNodes":       {allow: nodeRead},
	"NodePool.ListJobs":        {allow: nsCap(acl.NamespaceCapabilityListJobs)},
	"NodePool.UpsertNodePools": {allow: management},
	"NodePool.DeleteNodePools": {allow: management},
	// Autoscaled pools: reading the configuration, status and instances
	// needs node read; configuring a pool a management token (it makes
	// the leader create instances); an instance's behaviour node write.
	"NodePool.GetAutoscaler":       {allow: nodeRead},
	"NodePool.ListInstances":       {allow: nodeRead},
	"NodePool.UpsertAutoscaler":    {allow: management},
	"NodePool.DeleteAutoscaler":    {allow: management},
	"NodePool.SetInstanceBehavior": {allow: nodeWrite},
	"Node.GetNode":                 {allow: nodeRead},
	"Node.List":                    {allow: nodeRead},
	"Node.GetAllocs":               {allow: nodeRead, filter: nodeAllocsFilter},

	"Eval.Dequeue":     {class: aclServer},
	"Eval.Ack":         {class: aclServer},
	"Eval.Nack":        {class: aclServer},
	"Eval.Update":      {class: aclServer},
	"Eval.Create":      {class: aclServer},
	"Eval.Reblock":     {class: aclServer},
	"Eval.GetEval":     {allow: anyToken, filter: evalFilter},
	"Eval.List":        {allow: nsCap(acl.NamespaceCapabilityReadJob)},
	"Eval.Allocations": {allow: anyToken, filter: allocListFilter},
	"Plan.Submit":      {class: aclServer},

	"Alloc.GetAlloc": {allow: anyToken, filter: allocFilter},
	// Alloc.GetAllocs is how client agents fetch their allocations.
	"Alloc.GetAllocs": {class: aclNodeSecret},
	"Alloc.List":      {allow: nsCap(acl.NamespaceCapabilityReadJob)},
	"Alloc.Stop":      {allow: allocLifecycle},
	// A client agent's tasks' workload identities (its node's secret).
	"Alloc.SignIdentities": {class: aclNodeSecret},

	// Garbage collection and snapshots need a management token, as in
	// Nomad.
	"System.GarbageCollect":              {allow: management},
	"Operator.RaftGetConfiguration":      {allow: func(a *acl.ACL, _ *Server, _ any) bool { return a.AllowOperatorRead() }},
	"Operator.QueueStats":                {allow: func(a *acl.ACL, _ *Server, _ any) bool { return a.AllowOperatorRead() }},
	"Operator.RaftRemovePeer":            {allow: func(a *acl.ACL, _ *Server, _ any) bool { return a.AllowOperatorWrite() }},
	"Operator.TransferLeadership":        {allow: management}, // as Nomad: a management token
	"Operator.SchedulerGetConfiguration": {allow: func(a *acl.ACL, _ *Server, _ any) bool { return a.AllowOperatorRead() }},
	"Operator.SchedulerSetConfiguration": {allow: func(a *acl.ACL, _ *Server, _ any) bool { return a.AllowOperatorWrite() }},
	"Operator.SnapshotSave":              {allow: management},
	"Operator.SnapshotUpload":            {allow: management},
	"Operator.SnapshotRestore":           {allow: management},

	// ACL endpoints: bootstrap is open (it works once); reads of a
	// policy or a token, self and resolve take any token and the
	// endpoint limits what it shows; everything else is management's.
	"ACL.Bootstrap":      {class: aclOpen},
	"ACL.UpsertPolicies": {allow: management},
	"ACL.DeletePolicies": {allow: management},
	"ACL.GetPolicy":      {allow: anyToken},
	"ACL.ListPolicies":   {allow: anyToken},
	"ACL.UpsertTokens":   {allow: management},
	"ACL.DeleteTokens":   {allow: management},
	"ACL.GetToken":       {allow: anyToken},
	"ACL.ListTokens":     {allow: management},
	"ACL.WhoAmI":         {allow: anyToken},
	"ACL.ResolveToken":   {allow: anyToken},
	// Rotating the servers' internal credential: management only.
	"ACL.RotateClusterSecret": {allow: management},

	// Variables: the capabilities of the namespace's variables rules on
	// the path (workload identities: their job's paths). A list needs a
	// variables rule in the namespace and shows only the paths it may
	// list; a conflict's items are shown only to a caller who may read
	// them.
	"Variables.Apply": {allow: variableApplyAllowed, filter: variableConflictFilter},
	"Variables.Read":  {allow: variableReadAllowed},
	"Variables.List":  {allow: variableListAllowed, filter: variableListFilter},

	// The keyring: management tokens, as in Nomad; a key's material
	// only to servers.
	"Keyring.ListRootKeyMeta": {allow: management},
	"Keyring.Rotate":          {allow: management},
	"Keyring.Get":             {class: aclServer},

	// Native services, with Nomad's capabilities: reads need read-job in
	// the namespace, a user's delete submit-job; clients register and
	// deregister their own allocations' services with their node secret.
	"ServiceRegistration.Upsert":           {class: aclNodeSecret},
	"ServiceRegistration.DeleteByAllocIDs": {class: aclNodeSecret},
	"ServiceRegistration.DeleteByID":       {class: aclNodeOrUser, allow: nsCap(acl.NamespaceCapabilitySubmitJob)},
	"ServiceRegistration.List":             {allow: serviceRead},
	"ServiceRegistration.GetService":       {allow: serviceRead},
	"Job.GetServiceRegistrations":          {allow: nsCap(acl.NamespaceCapabilityReadJob)},
	"Alloc.GetServiceRegistrations":        {allow: allocReadJob},
}

// checkACLRules fails unless every method has a rule and every rule a
// method.
func checkACLRules(methods map[string]*rpcMethod) error {
	for name := range methods {
		if _, ok := rpcACLRules[name]; !ok {
			return fmt.Errorf("RPC method %s has no ACL rule in rpcACLRules (server/rpc_acl.go)", name)
		}
	}
	for name := range rpcACLRules {
		if _, ok := methods[name]; !ok {
			return fmt.Errorf("rpcACLRules names %s, which is not an RPC method", name)
		}
	}
	return nil
}

func management(a *acl.ACL, _ *Server, _ any) bool { return a.IsManagement() }
func anyToken(*acl.ACL, *Server, any) bool         { return true }
func nodeRead(a *acl.ACL, _ *Server, _ any) bool   { return a.AllowNodeRead() }
func nodeWrite(a *acl.ACL, _ *Server, _ any) bool  { return a.AllowNodeWrite() }

// requestNamespace is the namespace a request acts in.
func requestNamespace(args any) string {
	if r, ok := args.(interface{ RequestNamespace() string }); ok {
		return r.RequestNamespace()
	}
	return structs.DefaultNamespace
}

// allowNamespace checks capability in ns; the wildcard namespace "*"
// (lists across namespaces) needs it in every namespace.
func allowNamespace(a *acl.ACL, ns, capability string) bool {
	if ns == "*" {
		return a.AllowAllNamespaces(capability)
	}
	return a.AllowNamespaceOperation(ns, capability)
}

// nsCap requires capability in the request's namespace.
// serviceRead allows reading the native services of the request's
// namespace: read-job there, or a workload identity of that namespace
// (templates' nomadService reads), as Nomad.
func serviceRead(a *acl.ACL, _ *Server, args any) bool {
	return a.AllowServiceRead(requestNamespace(args))
}

func nsCap(capability string) func(*acl.ACL, *Server, any) bool {
	return func(a *acl.ACL, _ *Server, args any) bool {
		return allowNamespace(a, requestNamespace(args), capability)
	}
}

// nsAnyCap requires one of capabilities in the request's namespace.
func nsAnyCap(capabilities ...string) func(*acl.ACL, *Server, any) bool {
	return func(a *acl.ACL, _ *Server, args any) bool {
		ns := requestNamespace(args)
		for _, c := range capabilities {
			if allowNamespace(a, ns, c) {
				return true
			}
		}
		return false
	}
}

// jobNamespaceCap requires capability in the namespace of the job the
// request carries (the one it is written to) and in the request's.
func jobNamespaceCap(capability string) func(*acl.ACL, *Server, any) bool {
	return func(a *acl.ACL, _ *Server, args any) bool {
		ns := requestNamespace(args)
		var job *structs.Job
		switch r := args.(type) {
		case *structs.JobRegisterRequest:
			job = r.Job
		case *structs.JobPlanRequest:
			job = r.Job
		}
		if job != nil && job.Namespace != "" && job.Namespace != ns {
			if !a.AllowNamespaceOperation(job.Namespace, capability) {
				return false
			}
		}
		return a.AllowNamespaceOperation(ns, capability)
	}
}

// allocLifecycle requires alloc-lifecycle in the allocation's namespace,
// read from this server's state. An allocation this server does not know
// is left to the endpoint (not found here; a leader that knows it checks
// again itself).
func allocLifecycle(a *acl.ACL, s *Server, args any) bool {
	ns := requestNamespace(args)
	if r, ok := args.(*structs.AllocStopRequest); ok {
		if al, err := s.fsm.State().AllocByID(nil, r.AllocID); err == nil && al != nil {
			ns = al.Namespace
		}
	}
	return a.AllowNamespaceOperation(ns, acl.NamespaceCapabilityAllocLifecycle)
}

// allocReadJob requires read-job in the allocation's namespace, read from
// this server's state (the request's when the allocation is unknown here).
func allocReadJob(a *acl.ACL, s *Server, args any) bool {
	ns := requestNamespace(args)
	if r, ok := args.(*structs.AllocServiceRegistrationsRequest); ok {
		if al, err := s.fsm.State().AllocByID(nil, r.AllocID); err == nil && al != nil {
			ns = al.Namespace
		}
	}
	return a.AllowNamespaceOperation(ns, acl.NamespaceCapabilityReadJob)
}

func allocFilter(a *acl.ACL, reply any) bool {
	r, ok := reply.(*structs.SingleAllocResponse)
	return !ok || r.Alloc == nil || a.AllowNamespaceOperation(r.Alloc.Namespace, acl.NamespaceCapabilityReadJob)
}

func evalFilter(a *acl.ACL, reply any) bool {
	r, ok := reply.(*structs.SingleEvalResponse)
	return !ok || r.Eval == nil || a.AllowNamespaceOperation(r.Eval.Namespace, acl.NamespaceCapabilityReadJob)
}

func allocListFilter(a *acl.ACL, reply any) bool {
	r, ok := reply.(*structs.AllocListResponse)
	if !ok {
		return true
	}
	for _, al := range r.Allocations {
		if !a.AllowNamespaceOperation(al.Namespace, acl.NamespaceCapabilityReadJob) {
			return false
		}
	}
	return true
}

// nodeAllocsFilter drops the allocations of namespaces the token cannot
// read-job in, as Nomad does.
func nodeAllocsFilter(a *acl.ACL, reply any) bool {
	r, ok := reply.(*structs.NodeAllocsResponse)
	if !ok || a.IsManagement() {
		return true
	}
	kept := make([]*structs.Allocation, 0, len(r.Allocs))
	for _, al := range r.Allocs {
		if a.AllowNamespaceOperation(al.Namespace, acl.NamespaceCapabilityReadJob) {
			kept = append(kept, al)
		}
	}
	r.Allocs = kept
	return true
}

// requestToken returns the caller's secret, "" for none.
func requestToken(args any) string {
	if r, ok := args.(interface{ RequestToken() string }); ok {
		return r.RequestToken()
	}
	return ""
}

// authorizeRPC applies method's rule to a call. It returns the caller's
// ACL for filterRPCReply (nil when there is nothing to filter).
func (s *Server) authorizeRPC(method string, args any) (*acl.ACL, error) {
	rule, ok := rpcACLRules[method]
	if !ok {
		return nil, structs.ErrPermissionDenied
	}
	if rule.class == aclOpen {
		return nil, nil
	}
	id, err := s.resolveToken(requestToken(args))
	if err != nil {
		return nil, err
	}
	switch rule.class {
	case aclServer:
		if id.internal || id.acl.IsManagement() {
			return nil, nil
		}
		return nil, structs.ErrPermissionDenied
	case aclNodeSecret:
		switch {
		case id.internal, id.acl.IsManagement():
			return nil, nil
		case id.unknown:
			return nil, nil // a node secret, judged by the node-secret check
		}
		return nil, structs.ErrPermissionDenied
	case aclNodeOrUser:
		if id.unknown {
			return nil, nil // a node secret, judged by the endpoint
		}
	}
	if id.unknown {
		return nil, structs.ErrTokenNotFound
	}
	if !rule.allow(id.acl, s, args) {
		return nil, structs.ErrPermissionDenied
	}
	if rule.filter == nil || id.acl.IsManagement() {
		return nil, nil
	}
	return id.acl, nil
}

// filterRPCReply applies method's reply filter for a (from authorizeRPC).
func filterRPCReply(method string, a *acl.ACL, reply any) error {
	if a == nil {
		return nil
	}
	if !rpcACLRules[method].filter(a, reply) {
		return structs.ErrPermissionDenied
	}
	return nil
}
