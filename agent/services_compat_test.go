package agent

import (
	"net/http"
	"reflect"
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
