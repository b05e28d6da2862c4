package agent

import (
	"net/http"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// NewHTTPHandler returns the API's handler. A request with a known path
// and the wrong method gets 405; an unknown path gets 404; a path of
// Nomad's API that Drover does not implement gets 501 naming the feature.
// The first call also installs the agent's in-memory metrics sink
// (GET /v1/metrics). With cfg.EnableDebug the pprof handlers are mounted
// under /debug/pprof/ (see registerDebug).
func NewHTTPHandler(srv Server, cfg *Config, logger hclog.Logger, opts ...HTTPOption) http.Handler {
	h := &httpAPI{srv: srv, cfg: cfg, logger: logger, metrics: processTelemetry()}
	for _, o := range opts {
		o(h)
	}
	mux := http.NewServeMux()
	handle := func(pattern string, fn handlerFunc) { mux.Handle(pattern, h.wrap(fn)) }

	handle("GET /v1/status/leader", h.statusLeader)
	handle("GET /v1/status/peers", h.statusPeers)

	handle("GET /v1/jobs", h.jobList)
	handle("PUT /v1/jobs", h.jobRegister)
	handle("POST /v1/jobs", h.jobRegister)
	handle("PUT /v1/validate/job", h.jobValidate)
	handle("POST /v1/validate/job", h.jobValidate)
	handle("PUT /v1/jobs/parse", h.jobsParse)
	handle("POST /v1/jobs/parse", h.jobsParse)
	handle("GET /v1/job/{id}", h.jobGet)
	handle("PUT /v1/job/{id}", h.jobRegister)
	handle("POST /v1/job/{id}", h.jobRegister)
	handle("DELETE /v1/job/{id}", h.jobDeregister)
	handle("GET /v1/job/{id}/allocations", h.jobAllocations)
	handle("GET /v1/job/{id}/evaluations", h.jobEvaluations)
	handle("GET /v1/job/{id}/summary", h.jobSummary)
	handle("GET /v1/job/{id}/services", h.jobServices)
	handle("GET /v1/job/{id}/deployment", h.jobLatestDeployment)
	handle("GET /v1/job/{id}/deployments", h.jobDeployments)
	handle("GET /v1/job/{id}/versions", h.jobVersions)
	handle("GET /v1/deployments", h.deploymentList)
	handle("GET /v1/deployment/{id}", h.deploymentGet)
	handle("GET /v1/deployment/allocations/{id}", h.deploymentAllocations)
	for _, m := range []string{"PUT", "POST"} {
		handle(m+" /v1/deployment/promote/{id}", h.deploymentPromote)
		handle(m+" /v1/deployment/fail/{id}", h.deploymentFail)
		handle(m+" /v1/deployment/pause/{id}", h.deploymentPause)
		handle(m+" /v1/deployment/allocation-health/{id}", h.deploymentAllocHealth)
		handle(m+" /v1/deployment/unblock/{id}", h.deploymentUnblock)
	}
	handle("PUT /v1/job/{id}/revert", h.jobRevert)
	handle("POST /v1/job/{id}/revert", h.jobRevert)
	handle("PUT /v1/job/{id}/stable", h.jobStable)
	handle("POST /v1/job/{id}/stable", h.jobStable)
	handle("GET /v1/job/{id}/scale", h.jobScaleStatus)
	handle("PUT /v1/job/{id}/scale", h.jobScale)
	handle("POST /v1/job/{id}/scale", h.jobScale)
	handle("GET /v1/scaling/policies", h.scalingPolicies)
	handle("GET /v1/scaling/policy/{id}", h.scalingPolicy)
	handle("PUT /v1/job/{id}/plan", h.jobPlan)
	handle("POST /v1/job/{id}/plan", h.jobPlan)
	handle("PUT /v1/job/{id}/periodic/force", h.jobPeriodicForce)
	handle("POST /v1/job/{id}/periodic/force", h.jobPeriodicForce)
	handle("PUT /v1/job/{id}/dispatch", h.jobDispatch)
	handle("POST /v1/job/{id}/dispatch", h.jobDispatch)

	handle("GET /v1/nodes", h.nodeList)
	handle("GET /v1/node/{id}", h.nodeGet)
	handle("GET /v1/node/{id}/allocations", h.nodeAllocations)
	handle("PUT /v1/node/{id}/drain", h.nodeDrain)
	handle("POST /v1/node/{id}/drain", h.nodeDrain)
	handle("PUT /v1/node/{id}/eligibility", h.nodeEligibility)
	handle("POST /v1/node/{id}/eligibility", h.nodeEligibility)

	handle("GET /v1/allocations", h.allocList)
	handle("GET /v1/allocation/{id}", h.allocGet)
	handle("GET /v1/allocation/{id}/services", h.allocServices)
	handle("GET /v1/allocation/{id}/checks", h.allocChecks)
	handle("GET /v1/client/allocation/{id}/checks", h.allocChecks)
	handle("PUT /v1/allocation/{id}/stop", h.allocStop)
	handle("POST /v1/allocation/{id}/stop", h.allocStop)

	handle("GET /v1/services", h.serviceList)
	handle("GET /v1/service/{name}", h.serviceGet)
	handle("DELETE /v1/service/{name}/{id}", h.serviceDelete)

	handle("GET /v1/evaluations", h.evalList)
	handle("GET /v1/evaluation/{id}", h.evalGet)
	handle("GET /v1/evaluation/{id}/allocations", h.evalAllocations)

	handle("PUT /v1/system/gc", h.systemGC)
	handle("GET /v1/metrics", h.metricsGet)

	handle("GET /v1/operator/raft/configuration", h.raftConfiguration)
	handle("DELETE /v1/operator/raft/peer", h.raftRemovePeer)
	handle("PUT /v1/operator/raft/transfer-leadership", h.raftTransferLeadership)
	handle("POST /v1/operator/raft/transfer-leadership", h.raftTransferLeadership)
	handle("GET /v1/operator/queue", h.operatorQueue)
	handle("GET /v1/operator/scheduler/configuration", h.schedulerGetConfig)
	handle("PUT /v1/operator/scheduler/configuration", h.schedulerSetConfig)
	handle("POST /v1/operator/scheduler/configuration", h.schedulerSetConfig)
	handle("GET /v1/operator/snapshot", h.snapshotSave)
	handle("PUT /v1/operator/snapshot", h.snapshotRestore)
	handle("POST /v1/operator/snapshot", h.snapshotRestore)

	handle("GET /v1/agent/self", h.agentSelf)
	handle("GET /v1/agent/health", h.agentHealth)
	handle("GET /v1/agent/members", h.agentMembers)

	handle("GET /v1/client/fs/logs/{alloc}", h.clientLogs)
	handle("GET /v1/client/allocation/{id}/stats", h.clientAllocStats)
	handle("GET /v1/client/stats", h.clientHostStats)

	h.registerACL(handle)
	h.registerVariables(handle)
	pools := http.NewServeMux()
	h.registerNodePools(mux, pools)

	if cfg.EnableDebug {
		if cfg.ACL.Enabled {
			mux.Handle("/debug/pprof/", h.debugWithACL())
		} else {
			registerDebug(mux)
		}
	}

	for _, u := range unsupportedEndpoints {
		for _, m := range []string{"GET", "PUT", "POST", "DELETE"} {
			handle(m+" "+u.pattern, unsupported(u.feature))
		}
	}
	// A node pool's paths have a mux of their own: ServeMux refuses
	// /v1/node/pool/{name} beside /v1/node/{id}/allocations (neither is
	// more specific).
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/node/pool/") {
			pools.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// unsupportedEndpoints are paths of Nomad's HTTP API that Drover does not
// implement. They answer 501 "Drover does not support <feature>" for GET,
// PUT, POST and DELETE, so a Nomad tool gets a clear error rather than a 404 or, worse,
// a silently wrong answer. README.md's compatibility table lists them.
var unsupportedEndpoints = []struct{ pattern, feature string }{
	{"/v1/job/{id}/submission", "job submissions"},
	{"/v1/job/{id}/evaluate", "forced job evaluation"},
	{"/v1/job/{id}/action", "task actions"},
	{"/v1/job/{id}/actions", "task actions"},
	{"/v1/evaluations/count", "evaluation counts"},
	{"/v1/node/{id}/purge", "node purge"},
	{"/v1/node/{id}/meta", "dynamic node metadata"},
	{"/v1/client/", "this client endpoint (Drover's clients serve task logs and resource usage only)"},
	{"/v1/acl/roles", "ACL roles"},
	{"/v1/acl/role/", "ACL roles"},
	{"/v1/acl/auth-methods", "ACL auth methods (SSO)"},
	{"/v1/acl/auth-method/", "ACL auth methods (SSO)"},
	{"/v1/acl/binding-rules", "ACL binding rules"},
	{"/v1/acl/binding-rule/", "ACL binding rules"},
	{"/v1/acl/login", "ACL login (SSO)"},
	{"/v1/acl/oidc/", "ACL OIDC login"},
	{"/v1/acl/token/onetime", "one-time ACL tokens"},
	{"/v1/acl/token/onetime/exchange", "one-time ACL tokens"},
	{"/v1/namespaces", "namespaces management"},
	{"/v1/namespace/", "namespaces management"},
	{"/v1/quotas", "quotas"},
	{"/v1/quota/", "quotas"},
	{"/v1/sentinel/", "Sentinel policies"},
	{"/v1/volumes", "volumes"},
	{"/v1/volume/", "volumes"},
	{"/v1/plugins", "CSI plugins"},
	{"/v1/plugin/", "CSI plugins"},
	{"/v1/event/stream", "the event stream"},
	{"/v1/search", "search"},
	{"/v1/search/", "search"},
	{"/v1/recommendations", "recommendations"},
	{"/v1/recommendation/", "recommendations"},
	{"/v1/regions", "multiple regions"},
	{"/v1/system/reconcile/summaries", "summary reconciliation"},
	{"/v1/operator/autopilot/", "autopilot"},
	{"/v1/operator/license", "licensing"},
	{"/v1/operator/keyring/", "this keyring endpoint (Drover lists and rotates root keys only)"},
	{"/v1/agent/join", "joining over HTTP (use retry_join)"},
	{"/v1/agent/force-leave", "force-leave"},
	{"/v1/agent/servers", "client server lists"},
	{"/v1/agent/keyring/", "the gossip keyring"},
	{"/v1/agent/monitor", "log streaming"},
	{"/v1/agent/pprof/", "the agent pprof API (set enable_debug and use /debug/pprof/)"},
	{"/v1/agent/host", "host data"},
	{"/v1/agent/schedulers", "scheduler worker configuration"},
}
