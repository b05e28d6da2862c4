package agent

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
	"github.com/hashicorp/go-hclog"
	metrics "github.com/hashicorp/go-metrics"
)

// TestHTTPSurfaceRoutes checks each user-surface endpoint: the RPC it
// makes with which arguments, its status and its body.
func TestHTTPSurfaceRoutes(t *testing.T) {
	stubs := []*structs.AllocListStub{{ID: "a1", JobID: "web"}, {ID: "a2", JobID: "web"}}
	cases := []struct {
		name     string
		method   string
		target   string
		body     string
		rpc      string // the one RPC expected ("" for none)
		reply    func(reply any)
		err      error
		wantCode int
		wantBody string // substring
		check    func(t *testing.T, args any)
	}{
		{name: "job allocations", method: "GET", target: "/v1/job/web/allocations?all=true&namespace=ns",
			rpc: "Job.Allocations", reply: func(r any) { r.(*structs.AllocListResponse).Allocations = stubs },
			wantCode: 200, wantBody: `"ID":"a2"`,
			check: func(t *testing.T, args any) {
				a := args.(*structs.JobSpecificRequest)
				if a.JobID != "web" || !a.All || a.Namespace != "ns" {
					t.Fatalf("args = %+v", a)
				}
			}},
		{name: "pool instances", method: "GET", target: "/v1/node/pool/burst/instances", rpc: "NodePool.ListInstances",
			reply: func(r any) {
				r.(*structs.PoolInstancesResponse).Instances = []*structs.PoolInstance{{ID: "i-1", Pool: "burst", State: structs.InstanceBooting}}
			},
			wantCode: 200, wantBody: `"State":"booting"`,
			check: func(t *testing.T, args any) {
				if a := args.(*structs.NodePoolSpecificRequest); a.Name != "burst" {
					t.Fatalf("args = %+v", a)
				}
			}},
		{name: "pool autoscaler put", method: "PUT", target: "/v1/node/pool/burst/autoscaler", rpc: "NodePool.UpsertAutoscaler",
			body:     `{"Provider":"local","Max":3,"InstanceTypes":[{"Name":"small","CPU":1000,"MemoryMB":512,"PricePerHour":0.1}]}`,
			wantCode: 200,
			check: func(t *testing.T, args any) {
				if a := args.(*structs.PoolAutoscalerUpsertRequest); a.Autoscaler.Pool != "burst" || a.Autoscaler.Max != 3 {
					t.Fatalf("args = %+v", a.Autoscaler)
				}
			}},
		{name: "pool autoscaler unknown field", method: "PUT", target: "/v1/node/pool/burst/autoscaler",
			body: `{"Provider":"local","Maximum":3}`, wantCode: 400, wantBody: `Maximum`},
		{name: "pool autoscaler other pool", method: "PUT", target: "/v1/node/pool/burst/autoscaler",
			body: `{"Pool":"gpu","Provider":"local"}`, wantCode: 400, wantBody: `Pool`},
		{name: "pool instance hold", method: "PUT", target: "/v1/node/pool/all/instance/i-1", rpc: "NodePool.SetInstanceBehavior",
			body: `{"Behavior":"hold"}`, wantCode: 200,
			check: func(t *testing.T, args any) {
				if a := args.(*structs.PoolInstanceBehaviorRequest); a.InstanceID != "i-1" || a.Behavior != "hold" {
					t.Fatalf("args = %+v", a)
				}
			}},
		{name: "services", method: "GET", target: "/v1/services?namespace=*", rpc: "ServiceRegistration.List",
			reply: func(r any) {
				r.(*structs.ServiceRegistrationListResponse).Services = []*structs.ServiceRegistrationListStub{{Namespace: "default",
					Services: []*structs.ServiceRegistrationStub{{ServiceName: "web", Tags: []string{"a"}}}}}
			},
			wantCode: 200, wantBody: `[{"Namespace":"default","Services":[{"ServiceName":"web","Tags":["a"]}]}]`,
			check: func(t *testing.T, args any) {
				if a := args.(*structs.ServiceRegistrationListRequest); a.Namespace != "*" {
					t.Fatalf("args = %+v", a)
				}
			}},
		{name: "service by name with tags and choose", method: "GET", target: "/v1/service/web?tag=a&tag=b&choose=1|k",
			rpc: "ServiceRegistration.GetService", reply: func(r any) {
				r.(*structs.ServiceRegistrationByNameResponse).Services = []*structs.ServiceRegistration{
					{ID: "s1", ServiceName: "web", Tags: []string{"a"}}, {ID: "s2", ServiceName: "web", Tags: []string{"b", "a"}}}
			},
			wantCode: 200, wantBody: `[{"ID":"s2",`,
			check: func(t *testing.T, args any) {
				if a := args.(*structs.ServiceRegistrationByNameRequest); a.ServiceName != "web" || a.Choose != "1|k" {
					t.Fatalf("args = %+v", a)
				}
			}},
		{name: "service delete", method: "DELETE", target: "/v1/service/web/s1", rpc: "ServiceRegistration.DeleteByID",
			wantCode: 200, check: func(t *testing.T, args any) {
				if a := args.(*structs.ServiceRegistrationDeleteByIDRequest); a.ID != "s1" {
					t.Fatalf("args = %+v", a)
				}
			}},
		{name: "scheduler config get", method: "GET", target: "/v1/operator/scheduler/configuration",
			rpc: "Operator.SchedulerGetConfiguration", reply: func(r any) {
				o := r.(*structs.SchedulerConfigurationResponse)
				o.SchedulerConfig, o.Index = structs.DefaultSchedulerConfiguration(), 9
			},
			wantCode: 200, wantBody: `"SchedulerConfig":{"SchedulerAlgorithm":"binpack","PreemptionConfig":{"SystemSchedulerEnabled":true,`},
		{name: "scheduler config cas", method: "PUT", target: "/v1/operator/scheduler/configuration?cas=7",
			body: `{"SchedulerAlgorithm":"spread","PreemptionConfig":{"ServiceSchedulerEnabled":true},"ModifyIndex":3}`,
			rpc:  "Operator.SchedulerSetConfiguration", reply: func(r any) { r.(*structs.SchedulerSetConfigurationResponse).Updated = true },
			wantCode: 200, wantBody: `"Updated":true`,
			check: func(t *testing.T, args any) {
				a := args.(*structs.SchedulerSetConfigRequest)
				if !a.CAS || a.Config.ModifyIndex != 7 || a.Config.SchedulerAlgorithm != structs.SchedulerAlgorithmSpread ||
					!a.Config.PreemptionConfig.ServiceSchedulerEnabled {
					t.Fatalf("args = %+v", a)
				}
			}},
		{name: "scheduler config refused setting", method: "PUT", target: "/v1/operator/scheduler/configuration",
			body: `{"SchedulerAlgorithm":"binpack","PauseEvalBroker":true}`, wantCode: 400,
			wantBody: "PauseEvalBroker: Drover does not support pausing the evaluation broker"},
		{name: "scheduler config bad algorithm", method: "PUT", target: "/v1/operator/scheduler/configuration",
			body: `{"SchedulerAlgorithm":"worstfit"}`, wantCode: 400, wantBody: "SchedulerAlgorithm"},
		{name: "job services missing job", method: "GET", target: "/v1/job/web/services",
			rpc: "Job.GetServiceRegistrations", wantCode: 404, wantBody: "job not found"},
		{name: "job services", method: "GET", target: "/v1/job/web/services", rpc: "Job.GetServiceRegistrations",
			reply:    func(r any) { r.(*structs.JobServiceRegistrationsResponse).Services = []*structs.ServiceRegistration{} },
			wantCode: 200, wantBody: `[]`},
		{name: "alloc services missing alloc", method: "GET", target: "/v1/allocation/a1/services",
			rpc: "Alloc.GetServiceRegistrations", wantCode: 404, wantBody: "alloc not found"},
		{name: "job allocations empty", method: "GET", target: "/v1/job/web/allocations",
			rpc: "Job.Allocations", wantCode: 200, wantBody: `[]`},
		{name: "job allocations bad all", method: "GET", target: "/v1/job/web/allocations?all=sure",
			wantCode: 400, wantBody: "Invalid all"},
		{name: "job evaluations", method: "GET", target: "/v1/job/web/evaluations",
			rpc: "Job.Evaluations", reply: func(r any) {
				r.(*structs.EvalListResponse).Evaluations = []*structs.Evaluation{{ID: "e1", JobID: "web"}}
			},
			wantCode: 200, wantBody: `"ID":"e1"`},
		{name: "job summary", method: "GET", target: "/v1/job/web/summary", rpc: "Job.Summary",
			reply: func(r any) {
				r.(*structs.JobSummaryResponse).JobSummary = &structs.JobSummary{JobID: "web",
					Summary: map[string]structs.TaskGroupSummary{"g": {Running: 2}}}
			},
			wantCode: 200, wantBody: `"Running":2`},
		{name: "job summary missing", method: "GET", target: "/v1/job/web/summary", rpc: "Job.Summary",
			wantCode: 404, wantBody: "job not found"},
		{name: "job plan", method: "PUT", target: "/v1/job/web/plan", body: `{"Job": {"ID": "web"}, "Diff": true}`,
			rpc: "Job.Plan", reply: func(r any) {
				*r.(*structs.JobPlanResponse) = structs.JobPlanResponse{JobModifyIndex: 4,
					Annotations: &structs.PlanAnnotations{DesiredTGUpdates: map[string]*structs.DesiredUpdates{"g": {Place: 3}}},
					WriteMeta:   structs.WriteMeta{Index: 8}}
			},
			wantCode: 200, wantBody: `"Place":3`,
			check: func(t *testing.T, args any) {
				a := args.(*structs.JobPlanRequest)
				if !a.Diff || a.Job.ID != "web" || a.Namespace != "default" || a.Job.Namespace != "default" || a.Job.Region != "global" {
					t.Fatalf("args = %+v job %+v", a, a.Job)
				}
			}},
		{name: "job plan by POST", method: "POST", target: "/v1/job/web/plan", body: `{"Job": {"ID": "web"}}`,
			rpc: "Job.Plan", wantCode: 200},
		{name: "job plan id mismatch", method: "PUT", target: "/v1/job/api/plan", body: `{"Job": {"ID": "web"}}`,
			wantCode: 400, wantBody: `does not match the URL's job "api"`},
		{name: "job plan without job", method: "PUT", target: "/v1/job/web/plan", body: `{"Diff": true}`,
			wantCode: 400, wantBody: "Job must be specified"},
		{name: "job plan invalid", method: "PUT", target: "/v1/job/web/plan", body: `{"Job": {"ID": "web"}}`,
			rpc: "Job.Plan", err: &structs.ValidationError{Errors: []structs.FieldError{{Field: "TaskGroups", Message: "a job needs at least one task group"}}},
			wantCode: 400, wantBody: "TaskGroups: a job needs at least one task group"},

		{name: "job versions", method: "GET", target: "/v1/job/web/versions?diffs=true", rpc: "Job.GetJobVersions",
			reply: func(r any) {
				r.(*structs.JobVersionsResponse).Versions = []*structs.Job{{ID: "web", Version: 1}, {ID: "web"}}
				r.(*structs.JobVersionsResponse).Diffs = []*structs.JobDiff{{Type: structs.DiffTypeEdited, ID: "web"}}
			},
			wantCode: 200, wantBody: `"Diffs":[{"Type":"Edited","ID":"web"`,
			check: func(t *testing.T, args any) {
				if a := args.(*structs.JobVersionsRequest); a.JobID != "web" || !a.Diffs {
					t.Fatalf("args = %+v", a)
				}
			}},
		{name: "job versions none", method: "GET", target: "/v1/job/web/versions", rpc: "Job.GetJobVersions",
			wantCode: 200, wantBody: `"Versions":[]`},
		{name: "job versions diff_version", method: "GET", target: "/v1/job/web/versions?diffs=true&diff_version=1",
			wantCode: 501, wantBody: "Drover does not support diff_tag or diff_version"},
		{name: "job revert", method: "PUT", target: "/v1/job/web/revert",
			body: `{"JobID": "web", "JobVersion": 2, "EnforcePriorVersion": 3, "Namespace": "ns"}`, rpc: "Job.Revert",
			reply:    func(r any) { r.(*structs.JobRegisterResponse).EvalID = "e7" },
			wantCode: 200, wantBody: `"EvalID":"e7"`,
			check: func(t *testing.T, args any) {
				a := args.(*structs.JobRevertRequest)
				if a.JobID != "web" || a.JobVersion != 2 || a.EnforcePriorVersion == nil || *a.EnforcePriorVersion != 3 || a.Namespace != "ns" {
					t.Fatalf("args = %+v", a)
				}
			}},
		{name: "job revert id mismatch", method: "POST", target: "/v1/job/api/revert", body: `{"JobID": "web"}`,
			wantCode: 400, wantBody: `does not match the URL's job "api"`},
		{name: "job revert enforce mismatch", method: "PUT", target: "/v1/job/web/revert", body: `{"JobID": "web", "JobVersion": 0, "EnforcePriorVersion": 5}`,
			rpc: "Job.Revert", err: structs.NewError(structs.ErrCodeConflict, "revert request enforcing prior version 5"),
			wantCode: 409, wantBody: "enforcing prior version 5"},
		{name: "job stable", method: "PUT", target: "/v1/job/web/stable", body: `{"JobID": "web", "JobVersion": 1, "Stable": true}`,
			rpc: "Job.Stable", reply: func(r any) {
				*r.(*structs.JobStabilityResponse) = structs.JobStabilityResponse{JobModifyIndex: 9, WriteMeta: structs.WriteMeta{Index: 9}}
			},
			wantCode: 200, wantBody: `{"JobModifyIndex":9,"Index":9}`,
			check: func(t *testing.T, args any) {
				if a := args.(*structs.JobStabilityRequest); a.JobID != "web" || a.JobVersion != 1 || !a.Stable {
					t.Fatalf("args = %+v", a)
				}
			}},

		{name: "job scale status", method: "GET", target: "/v1/job/web/scale", rpc: "Job.ScaleStatus",
			reply: func(r any) {
				r.(*structs.JobScaleStatusResponse).JobScaleStatus = &structs.JobScaleStatus{JobID: "web",
					TaskGroups: map[string]*structs.TaskGroupScaleStatus{"g": {Desired: 3, Events: []*structs.ScalingEvent{}}}}
			},
			wantCode: 200, wantBody: `"TaskGroups":{"g":{"Desired":3,"Placed":0,"Running":0,"Healthy":0,"Unhealthy":0,"Events":[]}}`},
		{name: "job scale status missing", method: "GET", target: "/v1/job/web/scale", rpc: "Job.ScaleStatus",
			wantCode: 404, wantBody: "job not found"},
		{name: "job scale", method: "POST", target: "/v1/job/web/scale",
			body: `{"Count": 4, "Target": {"Job": "web", "Group": "g"}, "Message": "m", "Meta": {"a": 1}, "PolicyOverride": false}`,
			rpc:  "Job.Scale", reply: func(r any) { r.(*structs.JobRegisterResponse).EvalID = "e5" },
			wantCode: 200, wantBody: `"EvalID":"e5"`,
			check: func(t *testing.T, args any) {
				a := args.(*structs.ScalingRequest)
				if a.JobID != "web" || a.Count == nil || *a.Count != 4 || a.Target["Group"] != "g" || a.Message != "m" || a.Meta["a"] == nil {
					t.Fatalf("args = %+v", a)
				}
			}},
		{name: "job scale target mismatch", method: "PUT", target: "/v1/job/web/scale", body: `{"Count": 1, "Target": {"Job": "api", "Group": "g"}}`,
			wantCode: 400, wantBody: "does not match the URL's job"},

		{name: "alloc list", method: "GET", target: "/v1/allocations?prefix=a", rpc: "Alloc.List",
			reply: func(r any) { r.(*structs.AllocListResponse).Allocations = stubs }, wantCode: 200, wantBody: `"ID":"a1"`,
			check: func(t *testing.T, args any) {
				if a := args.(*structs.AllocListRequest); a.Prefix != "a" {
					t.Fatalf("args = %+v", a)
				}
			}},
		{name: "alloc get", method: "GET", target: "/v1/allocation/a1", rpc: "Alloc.GetAlloc",
			reply:    func(r any) { r.(*structs.SingleAllocResponse).Alloc = &structs.Allocation{ID: "a1"} },
			wantCode: 200, wantBody: `"ID":"a1"`},
		{name: "alloc get missing", method: "GET", target: "/v1/allocation/a1", rpc: "Alloc.GetAlloc",
			wantCode: 404, wantBody: "alloc not found"},
		{name: "alloc stop", method: "PUT", target: "/v1/allocation/a1/stop", rpc: "Alloc.Stop",
			reply:    func(r any) { *r.(*structs.AllocStopResponse) = structs.AllocStopResponse{EvalID: "e9", Index: 12} },
			wantCode: 200, wantBody: `{"EvalID":"e9","Index":12}`,
			check: func(t *testing.T, args any) {
				if a := args.(*structs.AllocStopRequest); a.AllocID != "a1" {
					t.Fatalf("args = %+v", a)
				}
			}},
		{name: "alloc stop by POST", method: "POST", target: "/v1/allocation/a1/stop", rpc: "Alloc.Stop", wantCode: 200},
		{name: "alloc stop missing", method: "PUT", target: "/v1/allocation/a1/stop", rpc: "Alloc.Stop",
			err: structs.NewError(structs.ErrCodeNotFound, "alloc a1 not found"), wantCode: 404, wantBody: "alloc a1 not found"},

		{name: "eval list filters", method: "GET", target: "/v1/evaluations?job=web&status=blocked", rpc: "Eval.List",
			wantCode: 200, wantBody: "[]",
			check: func(t *testing.T, args any) {
				if a := args.(*structs.EvalListRequest); a.FilterJobID != "web" || a.FilterEvalStatus != "blocked" {
					t.Fatalf("args = %+v", a)
				}
			}},
		{name: "eval allocations", method: "GET", target: "/v1/evaluation/e1/allocations", rpc: "Eval.Allocations",
			reply: func(r any) { r.(*structs.AllocListResponse).Allocations = stubs }, wantCode: 200, wantBody: `"ID":"a1"`,
			check: func(t *testing.T, args any) {
				if a := args.(*structs.EvalSpecificRequest); a.EvalID != "e1" {
					t.Fatalf("args = %+v", a)
				}
			}},

		{name: "node allocations", method: "GET", target: "/v1/node/n1/allocations", rpc: "Node.GetAllocs",
			reply: func(r any) {
				r.(*structs.NodeAllocsResponse).Allocs = []*structs.Allocation{{ID: "a1", Job: &structs.Job{ID: "web"}}}
			},
			wantCode: 200, wantBody: `"Job":{`},
		{name: "node drain on", method: "PUT", target: "/v1/node/n1/drain",
			body: `{"NodeID": "n1", "DrainSpec": {"Deadline": 60000000000, "IgnoreSystemJobs": true}}`,
			rpc:  "Node.UpdateDrain", reply: func(r any) {
				*r.(*structs.NodeUpdateResponse) = structs.NodeUpdateResponse{NodeModifyIndex: 5, EvalIDs: []string{"e1"},
					EvalCreateIndex: 6, HeartbeatTTL: time.Second, QueryMeta: structs.QueryMeta{Index: 6}}
			},
			wantCode: 200, wantBody: `{"NodeModifyIndex":5,"EvalIDs":["e1"],"EvalCreateIndex":6}`,
			check: func(t *testing.T, args any) {
				a := args.(*structs.NodeUpdateDrainRequest)
				if a.NodeID != "n1" || a.DrainStrategy == nil || a.DrainStrategy.Deadline != time.Minute ||
					!a.DrainStrategy.IgnoreSystemJobs || a.MarkEligible {
					t.Fatalf("args = %+v %+v", a, a.DrainStrategy)
				}
			}},
		{name: "node drain off", method: "POST", target: "/v1/node/n1/drain", body: `{"DrainSpec": null, "MarkEligible": true}`,
			rpc: "Node.UpdateDrain", wantCode: 200, wantBody: `"EvalIDs":[]`,
			check: func(t *testing.T, args any) {
				if a := args.(*structs.NodeUpdateDrainRequest); a.DrainStrategy != nil || !a.MarkEligible || a.NodeID != "n1" {
					t.Fatalf("args = %+v", a)
				}
			}},
		{name: "node drain id mismatch", method: "PUT", target: "/v1/node/n1/drain", body: `{"NodeID": "n2"}`,
			wantCode: 400, wantBody: "does not match"},
		{name: "node drain missing node", method: "PUT", target: "/v1/node/n1/drain", body: `{}`, rpc: "Node.UpdateDrain",
			err: structs.NewError(structs.ErrCodeNotFound, "node n1 not found"), wantCode: 404},
		{name: "node eligibility", method: "PUT", target: "/v1/node/n1/eligibility", body: `{"Eligibility": "ineligible"}`,
			rpc: "Node.UpdateEligibility", wantCode: 200,
			check: func(t *testing.T, args any) {
				if a := args.(*structs.NodeUpdateEligibilityRequest); a.NodeID != "n1" || a.Eligibility != "ineligible" {
					t.Fatalf("args = %+v", a)
				}
			}},
		{name: "node eligibility bad value", method: "POST", target: "/v1/node/n1/eligibility", body: `{"Eligibility": "maybe"}`,
			wantCode: 400, wantBody: `Invalid Eligibility "maybe"`},

		{name: "periodic force", method: "PUT", target: "/v1/job/web/periodic/force", rpc: "Job.PeriodicForce", wantCode: 200,
			check: func(t *testing.T, args any) {
				if a := args.(*structs.PeriodicForceRequest); a.JobID != "web" {
					t.Fatalf("args = %+v", a)
				}
			}},
		{name: "periodic force of a child id", method: "POST", target: "/v1/job/web%2Fperiodic-1/periodic/force", rpc: "Job.PeriodicForce", wantCode: 200,
			check: func(t *testing.T, args any) {
				if a := args.(*structs.PeriodicForceRequest); a.JobID != "web/periodic-1" {
					t.Fatalf("args = %+v", a)
				}
			}},
		{name: "periodic force needs PUT or POST", method: "GET", target: "/v1/job/web/periodic/force", wantCode: 405},

		{name: "system gc", method: "PUT", target: "/v1/system/gc", body: `{}`, rpc: "System.GarbageCollect", wantCode: 200},
		{name: "system gc needs PUT", method: "GET", target: "/v1/system/gc", wantCode: 405},

		{name: "unsupported endpoint", method: "PUT", target: "/v1/job/web/evaluate", wantCode: 501,
			wantBody: "Drover does not support forced job evaluation"},
		{name: "deployment unblock (multiregion)", method: "PUT", target: "/v1/deployment/unblock/d1", wantCode: 400,
			wantBody: "Drover does not support multiregion deployments (unblock)"},
		{name: "deployment unblock by POST", method: "POST", target: "/v1/deployment/unblock/d1", wantCode: 400,
			wantBody: "Drover does not support multiregion deployments (unblock)"},
		{name: "deployments", method: "GET", target: "/v1/deployments?prefix=d&namespace=ns", rpc: "Deployment.List",
			wantCode: 200, wantBody: `[]`,
			check: func(t *testing.T, args any) {
				if a := args.(*structs.DeploymentListRequest); a.Prefix != "d" || a.Namespace != "ns" {
					t.Errorf("args = %+v", a)
				}
			}},
		{name: "deployment not found", method: "GET", target: "/v1/deployment/d1", rpc: "Deployment.GetDeployment",
			wantCode: 404, wantBody: "deployment not found"},
		{name: "deployment", method: "GET", target: "/v1/deployment/d1", rpc: "Deployment.GetDeployment",
			reply: func(r any) {
				r.(*structs.SingleDeploymentResponse).Deployment = &structs.Deployment{ID: "d1", Status: "running"}
			},
			wantCode: 200, wantBody: `"Status":"running"`},
		{name: "deployment allocations", method: "GET", target: "/v1/deployment/allocations/d1", rpc: "Deployment.Allocations",
			wantCode: 200, wantBody: `[]`},
		{name: "deployment promote", method: "PUT", target: "/v1/deployment/promote/d1", rpc: "Deployment.Promote",
			body: `{"DeploymentID": "d1", "Groups": ["web"]}`, wantCode: 200, wantBody: `"EvalID"`,
			check: func(t *testing.T, args any) {
				if a := args.(*structs.DeploymentPromoteRequest); a.DeploymentID != "d1" || len(a.Groups) != 1 || a.All {
					t.Errorf("args = %+v", a)
				}
			}},
		{name: "deployment promote needs groups", method: "PUT", target: "/v1/deployment/promote/d1", body: `{}`, wantCode: 400},
		{name: "deployment promote other ID", method: "PUT", target: "/v1/deployment/promote/d1", body: `{"DeploymentID": "d2", "All": true}`, wantCode: 400},
		{name: "deployment fail", method: "POST", target: "/v1/deployment/fail/d1", rpc: "Deployment.Fail", wantCode: 200},
		{name: "deployment pause", method: "PUT", target: "/v1/deployment/pause/d1", rpc: "Deployment.Pause",
			body: `{"Pause": true}`, wantCode: 200,
			check: func(t *testing.T, args any) {
				if a := args.(*structs.DeploymentPauseRequest); !a.Pause || a.DeploymentID != "d1" {
					t.Errorf("args = %+v", a)
				}
			}},
		{name: "deployment allocation health", method: "PUT", target: "/v1/deployment/allocation-health/d1", rpc: "Deployment.SetAllocHealth",
			body: `{"HealthyAllocationIDs": ["a1"]}`, wantCode: 200},
		{name: "job deployments", method: "GET", target: "/v1/job/web/deployments?all=true", rpc: "Job.Deployments",
			wantCode: 200, wantBody: `[]`,
			check: func(t *testing.T, args any) {
				if a := args.(*structs.JobSpecificRequest); !a.All || a.JobID != "web" {
					t.Errorf("args = %+v", a)
				}
			}},
		{name: "job latest deployment none", method: "GET", target: "/v1/job/web/deployment", rpc: "Job.LatestDeployment",
			wantCode: 200, wantBody: `null`},
		{name: "unsupported job sub-path", method: "POST", target: "/v1/job/web/actions", wantCode: 501,
			wantBody: "Drover does not support task actions"},
		{name: "dispatch", method: "PUT", target: "/v1/job/web/dispatch", rpc: "Job.Dispatch", wantCode: 200,
			body: `{"Payload": "aGVsbG8=", "Meta": {"k": "v"}, "IdempotencyToken": "t1"}`,
			check: func(t *testing.T, args any) {
				if a := args.(*structs.JobDispatchRequest); a.JobID != "web" || string(a.Payload) != "hello" || a.Meta["k"] != "v" || a.IdempotencyToken != "t1" {
					t.Fatalf("args = %+v", a)
				}
			}},
		{name: "dispatch id mismatch", method: "POST", target: "/v1/job/web/dispatch", body: `{"JobID": "api"}`,
			wantCode: 400, wantBody: "does not match"},
		{name: "unsupported subtree", method: "GET", target: "/v1/acl/roles", wantCode: 501, wantBody: "Drover does not support ACL roles"},
		{name: "unsupported client api", method: "GET", target: "/v1/client/fs/ls/a1", wantCode: 501, wantBody: "Drover does not support this client endpoint"},
		{name: "logs need a task", method: "GET", target: "/v1/client/fs/logs/a1", wantCode: 400, wantBody: "Missing task"},
		{name: "alloc stats of an unknown allocation", method: "GET", target: "/v1/client/allocation/a1/stats",
			rpc: "Alloc.GetAlloc", wantCode: 404, wantBody: "not found"},
		{name: "filter expressions refused", method: "GET", target: "/v1/jobs?filter=Status%3D%3D%22running%22",
			wantCode: 501, wantBody: "Drover does not support filter expressions"},
		{name: "bad per_page", method: "GET", target: "/v1/jobs?per_page=x", wantCode: 400, wantBody: "Invalid per_page"},

		{name: "vars list", method: "GET", target: "/v1/vars?prefix=nomad/&namespace=prod", rpc: "Variables.List",
			reply: func(r any) {
				r.(*structs.VariablesListResponse).Data = []*structs.VariableMetadata{{Namespace: "prod", Path: "nomad/jobs/a", ModifyIndex: 4}}
			},
			wantCode: 200, wantBody: `[{"Namespace":"prod","Path":"nomad/jobs/a","CreateIndex":0,"CreateTime":0,"ModifyIndex":4,"ModifyTime":0}]`,
			check: func(t *testing.T, args any) {
				if a := args.(*structs.VariablesListRequest); a.Prefix != "nomad/" || a.Namespace != "prod" {
					t.Fatalf("args = %+v", a)
				}
			}},
		{name: "vars list empty", method: "GET", target: "/v1/vars", rpc: "Variables.List", wantCode: 200, wantBody: `[]`},
		{name: "var get", method: "GET", target: "/v1/var/nomad/jobs/web", rpc: "Variables.Read",
			reply: func(r any) {
				r.(*structs.VariablesReadResponse).Data = &structs.VariableDecrypted{VariableMetadata: structs.VariableMetadata{Path: "nomad/jobs/web"}, Items: structs.VariableItems{"k": "v"}}
			},
			wantCode: 200, wantBody: `"Items":{"k":"v"}`,
			check: func(t *testing.T, args any) {
				if a := args.(*structs.VariablesReadRequest); a.Path != "nomad/jobs/web" {
					t.Fatalf("args = %+v", a)
				}
			}},
		{name: "var get missing", method: "GET", target: "/v1/var/x", rpc: "Variables.Read", wantCode: 404, wantBody: "variable not found"},
		{name: "var put cas", method: "PUT", target: "/v1/var/a/b?cas=7", body: `{"Items":{"k":"v"}}`, rpc: "Variables.Apply",
			reply: func(r any) {
				out := r.(*structs.VariablesApplyResponse)
				out.Result, out.Output = structs.VarOpResultOk, &structs.VariableDecrypted{VariableMetadata: structs.VariableMetadata{Path: "a/b", ModifyIndex: 9}}
			},
			wantCode: 200, wantBody: `"ModifyIndex":9`,
			check: func(t *testing.T, args any) {
				a := args.(*structs.VariablesApplyRequest)
				if a.Op != structs.VarOpCAS || a.Var.ModifyIndex != 7 || a.Var.Path != "a/b" || a.Var.Items["k"] != "v" {
					t.Fatalf("args = %+v %+v", a, a.Var)
				}
			}},
		{name: "var put conflict", method: "PUT", target: "/v1/var/a?cas=0", body: `{"Items":{"k":"v"}}`, rpc: "Variables.Apply",
			reply: func(r any) {
				out := r.(*structs.VariablesApplyResponse)
				out.Result, out.Conflict = structs.VarOpResultConflict, &structs.VariableDecrypted{VariableMetadata: structs.VariableMetadata{Path: "a", ModifyIndex: 3}}
			},
			wantCode: 409, wantBody: `"ModifyIndex":3`},
		{name: "var put without items", method: "PUT", target: "/v1/var/a", body: `{}`, wantCode: 400, wantBody: "variable missing required Items object"},
		{name: "var put bad cas", method: "PUT", target: "/v1/var/a?cas=x", body: `{"Items":{"k":"v"}}`, wantCode: 400, wantBody: "can not parse cas"},
		{name: "var lock refused", method: "PUT", target: "/v1/var/a?lock-acquire", body: `{"Items":{"k":"v"}}`, wantCode: 501, wantBody: "Drover does not support variable locks"},
		{name: "var lock body refused", method: "PUT", target: "/v1/var/a", body: `{"Items":{"k":"v"},"Lock":{"TTL":"10s"}}`, wantCode: 501, wantBody: "Drover does not support variable locks"},
		{name: "var delete", method: "DELETE", target: "/v1/var/a?cas=4", rpc: "Variables.Apply",
			reply:    func(r any) { r.(*structs.VariablesApplyResponse).Result = structs.VarOpResultOk },
			wantCode: 204,
			check: func(t *testing.T, args any) {
				if a := args.(*structs.VariablesApplyRequest); a.Op != structs.VarOpDeleteCAS || a.Var.ModifyIndex != 4 {
					t.Fatalf("args = %+v", a)
				}
			}},
		{name: "keyring list", method: "GET", target: "/v1/operator/keyring/keys", rpc: "Keyring.ListRootKeyMeta",
			reply: func(r any) {
				r.(*structs.KeyringListRootKeyMetaResponse).Keys = []*structs.RootKeyMeta{{KeyID: "k1", State: "active"}}
			},
			wantCode: 200, wantBody: `"KeyID":"k1"`},
		{name: "keyring rotate", method: "PUT", target: "/v1/operator/keyring/rotate?full=true", rpc: "Keyring.Rotate",
			reply:    func(r any) { r.(*structs.KeyringRotateRootKeyResponse).Key = &structs.RootKeyMeta{KeyID: "k2"} },
			wantCode: 200, wantBody: `{"Key":{"KeyID":"k2"`,
			check: func(t *testing.T, args any) {
				if a := args.(*structs.KeyringRotateRootKeyRequest); !a.Full {
					t.Fatalf("args = %+v", a)
				}
			}},
		{name: "operator queue", method: "GET", target: "/v1/operator/queue", rpc: "Operator.QueueStats",
			reply: func(r any) {
				out := r.(*structs.QueueStatsResponse)
				out.Waiting, out.BlockedByReason = 2, map[string]int{"capacity": 1}
			},
			wantCode: 200, wantBody: `"Waiting":2,"WaitingByJob":[],`},
		{name: "keyring delete refused", method: "DELETE", target: "/v1/operator/keyring/key/k1", wantCode: 501, wantBody: "Drover does not support this keyring endpoint"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			if tc.rpc != "" {
				f.on(tc.rpc, func(_, reply any) error {
					if tc.reply != nil {
						tc.reply(reply)
					}
					return tc.err
				})
			}
			rec := do(t, testHandler(f), tc.method, tc.target, tc.body)
			if rec.Code != tc.wantCode {
				t.Fatalf("status = %d; want %d (body %q)", rec.Code, tc.wantCode, rec.Body)
			}
			if !strings.Contains(rec.Body.String(), tc.wantBody) {
				t.Fatalf("body = %q; want it to contain %q", rec.Body, tc.wantBody)
			}
			calls := f.recorded()
			if tc.rpc == "" {
				if len(calls) != 0 {
					t.Fatalf("unexpected RPCs: %+v", calls)
				}
				return
			}
			args := f.onlyCall(t, tc.rpc)
			if tc.check != nil {
				tc.check(t, args)
			}
		})
	}
}

func TestHTTPPagination(t *testing.T) {
	ids := []string{"d4", "a1", "c3", "b2", "e5"} // the server's order need not be the key order
	f := newFake().on("Alloc.List", func(_, reply any) error {
		out := reply.(*structs.AllocListResponse)
		for _, id := range ids {
			out.Allocations = append(out.Allocations, &structs.AllocListStub{ID: id})
		}
		out.Index = 3
		return nil
	})
	h := testHandler(f)
	page := func(query string) ([]string, string) {
		t.Helper()
		rec := do(t, h, "GET", "/v1/allocations"+query, "")
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", query, rec.Code, rec.Body)
		}
		var stubs []*structs.AllocListStub
		if err := json.Unmarshal(rec.Body.Bytes(), &stubs); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range stubs {
			got = append(got, s.ID)
		}
		return got, rec.Header().Get(headerNextToken)
	}
	cases := []struct {
		query     string
		want      []string
		wantToken string
	}{
		{query: "", want: ids},
		{query: "?per_page=2", want: []string{"a1", "b2"}, wantToken: "c3"},
		{query: "?per_page=2&next_token=c3", want: []string{"c3", "d4"}, wantToken: "e5"},
		{query: "?per_page=2&next_token=e5", want: []string{"e5"}},
		{query: "?per_page=10", want: []string{"a1", "b2", "c3", "d4", "e5"}},
		{query: "?next_token=bz", want: []string{"c3", "d4", "e5"}}, // a token for a row since removed
		{query: "?next_token=zz", want: nil},
		{query: "?per_page=2&reverse=true", want: []string{"e5", "d4"}, wantToken: "c3"},
		{query: "?per_page=2&reverse=true&next_token=c3", want: []string{"c3", "b2"}, wantToken: "a1"},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			got, token := page(tc.query)
			if !reflect.DeepEqual(got, tc.want) || token != tc.wantToken {
				t.Fatalf("page = %v token %q; want %v token %q", got, token, tc.want, tc.wantToken)
			}
		})
	}
	if len(ids) != 5 || ids[0] != "d4" {
		t.Fatal("paginate modified the server's slice")
	}
}

func TestHTTPJobsParse(t *testing.T) {
	hcl := `job "web" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}`
	body, _ := json.Marshal(structs.JobsParseHTTPRequest{JobHCL: hcl, Canonicalize: true})
	rec := do(t, testHandler(newFake()), "POST", "/v1/jobs/parse", string(body))
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var job structs.Job
	if err := json.Unmarshal(rec.Body.Bytes(), &job); err != nil {
		t.Fatal(err)
	}
	if job.ID != "web" || job.Namespace != "default" || job.TaskGroups[0].Tasks[0].Resources.MemoryMB != structs.DefaultTaskMemoryMB {
		t.Fatalf("job = %+v", job)
	}

	bad, _ := json.Marshal(structs.JobsParseHTTPRequest{JobHCL: "job \"web\" {\n  group \"g\" {\n    cout = 1\n  }\n}"})
	rec = do(t, testHandler(newFake()), "PUT", "/v1/jobs/parse", string(bad))
	if rec.Code != 400 || !strings.Contains(rec.Body.String(), `job.hcl:3:5: Unsupported argument`) {
		t.Fatalf("bad HCL: %d %s", rec.Code, rec.Body)
	}
	v1, _ := json.Marshal(structs.JobsParseHTTPRequest{JobHCL: hcl, HCLv1: true})
	if rec = do(t, testHandler(newFake()), "PUT", "/v1/jobs/parse", string(v1)); rec.Code != 501 {
		t.Fatalf("HCLv1: %d %s", rec.Code, rec.Body)
	}
}

func TestHTTPMetrics(t *testing.T) {
	h := testHandler(newFake())
	metrics.IncrCounter([]string{"drover", "test", "hits"}, 3)
	metrics.SetGaugeWithLabels([]string{"drover", "test", "depth"}, 7, []metrics.Label{{Name: "queue", Value: "a\"b"}})

	rec := do(t, h, "GET", "/v1/metrics", "")
	var summary metrics.MetricsSummary
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &summary) != nil || summary.Timestamp == "" {
		t.Fatalf("JSON metrics: %d %s", rec.Code, rec.Body)
	}

	rec = do(t, h, "GET", "/v1/metrics?format=prometheus", "")
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("prometheus: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	if rec = do(t, h, "GET", "/v1/metrics?format=xml", ""); rec.Code != 400 {
		t.Fatalf("bad format: %d", rec.Code)
	}
}

// A client may hold at most the limit of connections; one more gets 429
// and is closed, and a freed slot can be used again.
func TestHTTPConnLimit(t *testing.T) {
	f := newFake().on("Status.Peers", func(_, _ any) error { return nil })
	srv := newHTTPServerWithLimit(testHandler(f), hclog.NewNullLogger(), 2)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	addr := ln.Addr().String()

	get := func(c net.Conn) (int, error) {
		if _, err := fmt.Fprintf(c, "GET /v1/status/peers HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			return 0, err
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	var open []net.Conn
	for i := 0; i < 2; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if code, err := get(c); err != nil || code != 200 {
			t.Fatalf("connection %d: %d %v", i, code, err)
		}
		open = append(open, c)
	}
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	_ = extra.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(extra), nil)
	if err != nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("third connection: %v %v", resp, err)
	}
	resp.Body.Close()

	// Free a slot; a new connection is served once the server has seen
	// the close.
	open[0].Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		code, err := get(c)
		c.Close()
		if err == nil && code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slot never freed: %d %v", code, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestConnLimiterCounts(t *testing.T) {
	l := newConnLimiter(1, hclog.NewNullLogger())
	a, b := net.Pipe()
	defer b.Close()
	c := &addrConn{Conn: a, remote: &net.TCPAddr{IP: net.ParseIP("10.0.0.1"), Port: 5}}
	l.connState(c, http.StateNew)
	l.connState(c, http.StateActive)
	if n := l.open("10.0.0.1"); n != 1 {
		t.Fatalf("open = %d", n)
	}
	l.connState(c, http.StateHijacked)
	l.connState(c, http.StateClosed) // after a hijack: not counted twice
	if n := l.open("10.0.0.1"); n != 0 {
		t.Fatalf("open after close = %d", n)
	}
}

type addrConn struct {
	net.Conn
	remote net.Addr
}

func (c *addrConn) RemoteAddr() net.Addr { return c.remote }

// The blocking query parameters reach every list and read endpoint.
func TestHTTPBlockingParamsEverywhere(t *testing.T) {
	reads := map[string]string{
		"/v1/job/web/allocations":       "Job.Allocations",
		"/v1/job/web/evaluations":       "Job.Evaluations",
		"/v1/job/web/summary":           "Job.Summary",
		"/v1/allocations":               "Alloc.List",
		"/v1/allocation/a1":             "Alloc.GetAlloc",
		"/v1/evaluations":               "Eval.List",
		"/v1/evaluation/e1/allocations": "Eval.Allocations",
		"/v1/node/n1/allocations":       "Node.GetAllocs",
	}
	for path, method := range reads {
		t.Run(path, func(t *testing.T) {
			f := newFake().on(method, func(_, _ any) error { return nil })
			do(t, testHandler(f), "GET", path+"?index=42&wait=2s&stale", "")
			calls := f.recorded()
			if len(calls) != 1 {
				t.Fatalf("calls = %+v", calls)
			}
			q := reflect.ValueOf(calls[0].args).Elem().FieldByName("QueryOptions").Interface().(structs.QueryOptions)
			if q.MinQueryIndex != 42 || q.MaxQueryTime != 2*time.Second || !q.AllowStale {
				t.Fatalf("query options = %+v", q)
			}
		})
	}
}
