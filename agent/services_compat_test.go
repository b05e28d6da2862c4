package agent

import (
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/structs"
)

// TestNomadClientServices registers, through Nomad's Go client, a job with
// a Nomad-provided service, registers its allocation's instance as a
// client would, and reads it back with api.Client.Services(), the job's
// and the allocation's services, a blocking query that a delete wakes,
// ?tag= and ?choose=.
func TestNomadClientServices(t *testing.T) {
	a, c := startServerAgent(t)
	node := registerNode(t, a, "n1")
	job := &nomad.Job{ID: new("web"), Datacenters: []string{"dc1"}, TaskGroups: []*nomad.TaskGroup{{
		Name: new("g"),
		Services: []*nomad.Service{{Name: "web", Provider: "nomad", PortLabel: "8080", Tags: []string{"v1", "blue"},
			Checks: []nomad.ServiceCheck{{Type: "tcp", Interval: 10 * time.Second, Timeout: 2 * time.Second}}}},
		Tasks: []*nomad.Task{{Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "/bin/sleep", "args": []string{"60"}}}},
	}}}
	resp, _, err := c.Jobs().Register(job, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitEval(t, c, resp.EvalID)
	allocs, _, err := c.Jobs().Allocations("web", false, nil)
	if err != nil || len(allocs) != 1 {
		t.Fatalf("allocations: %d, %v", len(allocs), err)
	}
	alloc := allocs[0]
	got, _, err := c.Jobs().Info("web", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := got.TaskGroups[0].Services[0]; s.Provider != "nomad" || s.AddressMode != "auto" || s.Checks[0].Name != `service: "web" check` {
		t.Fatalf("service read back as %+v", s)
	}

	// Nothing registered yet: an empty list, and [] for the job.
	list, meta, err := c.Services().List(nil)
	if err != nil || len(list) != 0 {
		t.Fatalf("empty list: %+v, %v", list, err)
	}
	reg := &structs.ServiceRegistration{ID: structs.ServiceRegistrationID(alloc.ID, "", "g", "web", "8080"),
		ServiceName: "web", Namespace: "default", NodeID: node.ID, Datacenter: "dc1", JobID: "web", AllocID: alloc.ID,
		Tags: []string{"v1", "blue"}, Address: "127.0.0.1", Port: 8080}
	var gr structs.GenericResponse
	if err := a.Server().RPC("ServiceRegistration.Upsert", &structs.ServiceRegistrationUpsertRequest{
		Services: []*structs.ServiceRegistration{reg}, WriteRequest: structs.WriteRequest{AuthToken: node.SecretID}}, &gr); err != nil {
		t.Fatal(err)
	}
	list, meta, err = c.Services().List(&nomad.QueryOptions{WaitIndex: meta.LastIndex, WaitTime: 5 * time.Second})
	if err != nil || len(list) != 1 || list[0].Namespace != "default" || list[0].Services[0].ServiceName != "web" ||
		len(list[0].Services[0].Tags) != 2 {
		t.Fatalf("list: %+v, %v", list, err)
	}
	regs, _, err := c.Services().Get("web", nil)
	if err != nil || len(regs) != 1 {
		t.Fatalf("get: %v, %v", regs, err)
	}
	want := nomad.ServiceRegistration{ID: reg.ID, ServiceName: "web", Namespace: "default", NodeID: node.ID,
		Datacenter: "dc1", JobID: "web", AllocID: alloc.ID, Tags: []string{"v1", "blue"}, Address: "127.0.0.1",
		Port: 8080, CreateIndex: regs[0].CreateIndex, ModifyIndex: regs[0].ModifyIndex}
	if !reflect.DeepEqual(*regs[0], want) {
		t.Fatalf("get = %+v", regs[0])
	}
	if regs[0].CreateIndex == 0 {
		t.Fatal("no CreateIndex")
	}
	tagged, _, err := c.Services().Get("web", &nomad.QueryOptions{Params: map[string]string{"tag": "green"}})
	if err != nil || len(tagged) != 0 {
		t.Fatalf("?tag=green: %v, %v", tagged, err)
	}
	chosen, _, err := c.Services().Get("web", &nomad.QueryOptions{Params: map[string]string{"choose": "3|" + alloc.ID}})
	if err != nil || len(chosen) != 1 {
		t.Fatalf("?choose: %v, %v", chosen, err)
	}
	byJob, _, err := c.Jobs().Services("web", nil)
	if err != nil || len(byJob) != 1 {
		t.Fatalf("job services: %v, %v", byJob, err)
	}
	byAlloc, qm, err := c.Allocations().Services(alloc.ID, nil)
	if err != nil || len(byAlloc) != 1 {
		t.Fatalf("alloc services: %v, %v", byAlloc, err)
	}
	if _, _, err := c.Jobs().Services("nope", nil); !isStatus(err, http.StatusNotFound) {
		t.Fatalf("services of a missing job: %v", err)
	}

	// A blocking read of the allocation's services wakes on the delete.
	done := make(chan []*nomad.ServiceRegistration, 1)
	go func() {
		r, _, err := c.Allocations().Services(alloc.ID, &nomad.QueryOptions{WaitIndex: qm.LastIndex, WaitTime: 5 * time.Second})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	time.Sleep(100 * time.Millisecond)
	if _, err := c.Services().Delete("web", reg.ID, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if len(r) != 0 {
			t.Fatalf("after delete: %v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the blocking read did not wake")
	}
}

func isStatus(err error, code int) bool {
	ue, ok := err.(nomad.UnexpectedResponseError)
	return ok && ue.StatusCode() == code
}

// TestDevAgentServicesAndChecks runs, on a dev agent (server and client),
// a raw_exec task whose service points at the agent's own HTTP port, with
// an http and a tcp check: the client registers the service, runs the
// checks, and Nomad's Go client reads both; stopping the job removes the
// registration.
func TestDevAgentServicesAndChecks(t *testing.T) {
	a := startDevClientAgent(t)
	nc := nomad.DefaultConfig()
	nc.Address = a.HTTPURL()
	c, err := nomad.NewClient(nc)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(a.HTTPAddr())
	job := &nomad.Job{ID: new("web"), Datacenters: []string{"dc1"}, TaskGroups: []*nomad.TaskGroup{{
		Name: new("g"),
		Services: []*nomad.Service{{Name: "api", Provider: "nomad", PortLabel: port, Tags: []string{"v1"},
			Checks: []nomad.ServiceCheck{
				{Name: "leader", Type: "http", Path: "/v1/status/leader", Interval: time.Second, Timeout: time.Second},
				{Name: "port", Type: "tcp", Interval: time.Second, Timeout: time.Second},
			}}},
		Tasks: []*nomad.Task{{Name: "t", Driver: "raw_exec", KillTimeout: new(time.Second),
			Config: map[string]any{"command": "/bin/sh", "args": []string{"-c", "exec sleep 1000"}}}},
	}}}
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	var regs []*nomad.ServiceRegistration
	pollUntil(t, "the service registered", 30*time.Second, func() bool {
		regs, _, err = c.Services().Get("api", nil)
		return err == nil && len(regs) == 1
	})
	r := regs[0]
	if r.Port != mustAtoi(t, port) || r.Address == "" || r.JobID != "web" || r.NodeID != a.Client().NodeID() ||
		!strings.HasPrefix(r.ID, "_nomad-task-"+r.AllocID+"-group-g-api-") {
		t.Fatalf("registration %+v", r)
	}
	var checks nomad.AllocCheckStatuses
	pollUntil(t, "both checks passing", 30*time.Second, func() bool {
		checks, err = c.Allocations().Checks(r.AllocID, nil)
		if err != nil || len(checks) != 2 {
			return false
		}
		for _, st := range checks {
			if st.Status != "success" {
				return false
			}
		}
		return true
	})
	for _, st := range checks {
		if st.Mode != "healthiness" || st.Service != "api" || st.Group != "g" || st.Task != "" || st.Timestamp == 0 {
			t.Fatalf("check %+v", st)
		}
		if st.Check == "leader" && st.StatusCode != 200 {
			t.Fatalf("http check %+v", st)
		}
	}
	// The servers' route answers the same, forwarded to the client.
	var viaServer map[string]nomad.AllocCheckStatus
	if _, err := c.Raw().Query("/v1/allocation/"+r.AllocID+"/checks", &viaServer, nil); err != nil || len(viaServer) != 2 {
		t.Fatalf("/v1/allocation/<id>/checks: %v, %v", viaServer, err)
	}

	if _, _, err := c.Jobs().Deregister("web", false, nil); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, "the registration removed", 30*time.Second, func() bool {
		regs, _, err = c.Services().Get("api", nil)
		return err == nil && len(regs) == 0
	})
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
