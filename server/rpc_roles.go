package server

import (
	"crypto/tls"

	"github.com/drover-project/drover/internal/tlsutil"
	"github.com/drover-project/drover/structs"
)

// Who may call what over the RPC port. With TLS and
// verify_server_hostname, a connection's role is read once, from the
// peer's certificate at the handshake (connRoleOf); each call then costs
// one comparison against its method's access, set in rpcMethod when the
// method tables are built (setupRPC). Without TLS, or without
// verify_server_hostname, every connection is connTrusted and nothing is
// checked, as in Nomad. Calls made in-process (Server.RPC) are never
// checked: the HTTP API calls them for users.

// rpcAccess is who may call a method.
type rpcAccess uint8

const (
	// accessServer: servers only (server-to-server: scheduling workers,
	// cluster formation). The zero value: a method missing from
	// rpcAccessTable is for servers.
	accessServer rpcAccess = iota
	// accessClient: client agents (and servers): a node's own calls.
	accessClient
	// accessAny: any certificate the CA signed: the user calls that a
	// server's HTTP API makes for its callers anyway (a client agent's
	// HTTP API forwards them to the servers with its own certificate).
	accessAny
)

// rpcAccessTable gives every RPC method its access. Keep it beside the
// endpoints: a new method not listed here is for servers only
// (TestRPCAccessTableCoversMethods lists what is missing).
var rpcAccessTable = map[string]rpcAccess{
	// Server to server.
	"Status.Announce": accessServer,
	"Eval.Dequeue":    accessServer,
	"Eval.Ack":        accessServer,
	"Eval.Nack":       accessServer,
	"Eval.Update":     accessServer,
	"Eval.Create":     accessServer,
	"Eval.Reblock":    accessServer,
	"Plan.Submit":     accessServer,
	// A root key's material (keyring.go).
	"Keyring.Get": accessServer,

	// A client agent's calls for its node (each also needs the node's
	// secret: node_endpoint.go, node_allocs.go).
	"Node.Register":        accessClient,
	"Node.UpdateStatus":    accessClient,
	"Node.UpdateAlloc":     accessClient,
	"Node.GetClientAllocs": accessClient,
	"Alloc.GetAllocs":      accessClient,
	"Alloc.SignIdentities": accessClient,
	// Service registrations of the node's allocations.
	"ServiceRegistration.Upsert":           accessClient,
	"ServiceRegistration.DeleteByAllocIDs": accessClient,

	// User calls (the HTTP API's).
	"Status.Leader":                      accessAny,
	"Status.Peers":                       accessAny,
	"Status.Members":                     accessAny,
	"Job.Register":                       accessAny,
	"Job.Deregister":                     accessAny,
	"Job.GetJob":                         accessAny,
	"Job.List":                           accessAny,
	"Job.Plan":                           accessAny,
	"Job.Validate":                       accessAny,
	"Job.Summary":                        accessAny,
	"Job.Allocations":                    accessAny,
	"Job.Evaluations":                    accessAny,
	"Job.GetJobVersions":                 accessAny,
	"Job.Revert":                         accessAny,
	"Job.Stable":                         accessAny,
	"Job.Scale":                          accessAny,
	"Job.ScaleStatus":                    accessAny,
	"Scaling.ListPolicies":               accessAny,
	"Scaling.GetPolicy":                  accessAny,
	"Job.PeriodicForce":                  accessAny,
	"Job.Dispatch":                       accessAny,
	"Deployment.List":                    accessAny,
	"Deployment.GetDeployment":           accessAny,
	"Deployment.Allocations":             accessAny,
	"Deployment.Promote":                 accessAny,
	"Deployment.Fail":                    accessAny,
	"Deployment.Pause":                   accessAny,
	"Deployment.SetAllocHealth":          accessAny,
	"Job.Deployments":                    accessAny,
	"Job.LatestDeployment":               accessAny,
	"Node.GetNode":                       accessAny,
	"Node.List":                          accessAny,
	"Node.GetAllocs":                     accessAny,
	"Node.UpdateDrain":                   accessAny,
	"Node.UpdateEligibility":             accessAny,
	"Alloc.GetAlloc":                     accessAny,
	"Alloc.List":                         accessAny,
	"Alloc.Stop":                         accessAny,
	"Eval.GetEval":                       accessAny,
	"Eval.List":                          accessAny,
	"Eval.Allocations":                   accessAny,
	"System.GarbageCollect":              accessAny,
	"Operator.RaftGetConfiguration":      accessAny,
	"Operator.QueueStats":                accessAny,
	"Operator.RaftRemovePeer":            accessAny,
	"Operator.TransferLeadership":        accessAny,
	"NodePool.List":                      accessAny,
	"NodePool.GetNodePool":               accessAny,
	"NodePool.ListNodes":                 accessAny,
	"NodePool.ListJobs":                  accessAny,
	"NodePool.UpsertNodePools":           accessAny,
	"NodePool.DeleteNodePools":           accessAny,
	"NodePool.GetAutoscaler":             accessAny,
	"NodePool.ListInstances":             accessAny,
	"NodePool.UpsertAutoscaler":          accessAny,
	"NodePool.DeleteAutoscaler":          accessAny,
	"NodePool.SetInstanceBehavior":       accessAny,
	"Operator.SchedulerGetConfiguration": accessAny,
	"Operator.SchedulerSetConfiguration": accessAny,
	"Operator.SnapshotSave":              accessAny,
	"Operator.SnapshotUpload":            accessAny,
	"Operator.SnapshotRestore":           accessAny,
	"ACL.Bootstrap":                      accessAny,
	"ACL.RotateClusterSecret":            accessAny,
	"ACL.UpsertPolicies":                 accessAny,
	"ACL.DeletePolicies":                 accessAny,
	"ACL.GetPolicy":                      accessAny,
	"ACL.ListPolicies":                   accessAny,
	"ACL.UpsertTokens":                   accessAny,
	"ACL.DeleteTokens":                   accessAny,
	"ACL.GetToken":                       accessAny,
	"ACL.ListTokens":                     accessAny,
	"ACL.WhoAmI":                         accessAny,
	// Agents resolve a caller's token for their agent-local checks.
	"ACL.ResolveToken": accessAny,
	// Variables and the keyring's list and rotate (management tokens).
	"Variables.Apply":         accessAny,
	"Variables.Read":          accessAny,
	"Variables.List":          accessAny,
	"Keyring.ListRootKeyMeta": accessAny,
	"Keyring.Rotate":          accessAny,
	// Native services: reads, and a delete by users or the node.
	"ServiceRegistration.List":       accessAny,
	"ServiceRegistration.GetService": accessAny,
	"ServiceRegistration.DeleteByID": accessAny,
	"Job.GetServiceRegistrations":    accessAny,
	"Alloc.GetServiceRegistrations":  accessAny,
}

// connRole is what one connection on the RPC port may do.
type connRole uint8

const (
	// connTrusted: TLS is off, or on without verify_server_hostname.
	connTrusted connRole = iota
	// connPlaintext: a plaintext connection to a server that requires TLS;
	// every call is answered with an error saying so.
	connPlaintext
	// connServer, connClient and connOther: the peer's certificate names
	// a server or a client of this region, or neither (a cli
	// certificate, another region's).
	connServer
	connClient
	connOther
)

// connRoleOf is the role of a TLS connection that completed its handshake.
func (s *Server) connRoleOf(cs tls.ConnectionState) connRole {
	if !s.tls.VerifyServerHostname() {
		return connTrusted
	}
	switch s.tls.PeerRole(cs) {
	case tlsutil.RoleServer:
		return connServer
	case tlsutil.RoleClient:
		return connClient
	}
	return connOther
}

// String names the role in logs and errors.
func (r connRole) String() string {
	switch r {
	case connTrusted:
		return "trusted"
	case connPlaintext:
		return "plaintext"
	case connServer:
		return "server"
	case connClient:
		return "client"
	}
	return "non-agent"
}

// mayRaft reports whether the connection may carry Raft.
func (r connRole) mayRaft() bool { return r == connTrusted || r == connServer }

// checkCall returns nil if a connection of role r may call a method of
// access a with args (a request marked forwarded is a server's), else the
// permission_denied error to answer. Trusted connections cost one
// comparison.
func (r connRole) checkCall(method string, a rpcAccess, args any) error {
	switch r {
	case connTrusted, connServer:
		return nil
	case connPlaintext:
		return errTLSRequired
	}
	if (r == connClient && a == accessServer) || (r == connOther && a != accessAny) {
		return structs.NewError(structs.ErrCodePermissionDenied,
			"RPC %s is not allowed with a %s certificate", method, r)
	}
	if f, ok := args.(interface{ IsForwarded() bool }); ok && f.IsForwarded() {
		return structs.NewError(structs.ErrCodePermissionDenied,
			"RPC %s: only servers forward requests; the peer has a %s certificate", method, r)
	}
	return nil
}

// errTLSRequired answers the calls of a plaintext connection to a server
// whose RPC port requires TLS.
var errTLSRequired = structs.NewError(structs.ErrCodePermissionDenied,
	"this server requires TLS on its RPC port (tls { rpc = true }); the connection is plaintext: configure the agent's tls block with the cluster's CA and a certificate")
