package agent

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"
)

// portHelperEnv, when set in a process started from this test binary,
// makes it the listening task of TestDynamicPortTaskListens instead of a
// test run: it listens on NOMAD_IP_http:NOMAD_PORT_http and greets each
// connection with what it was told in its environment.
const portHelperEnv = "DROVER_TEST_PORT_HELPER"

func init() {
	if os.Getenv(portHelperEnv) != "1" {
		return
	}
	addr := net.JoinHostPort(os.Getenv("NOMAD_IP_http"), os.Getenv("NOMAD_PORT_http"))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "listen:", err)
		os.Exit(3)
	}
	for {
		c, err := l.Accept()
		if err != nil {
			os.Exit(4)
		}
		fmt.Fprintf(c, "port=%s addr=%s host_port=%s alloc_port=%s arg=%s\n", os.Getenv("NOMAD_PORT_http"),
			os.Getenv("NOMAD_ADDR_http"), os.Getenv("NOMAD_HOST_PORT_http"), os.Getenv("NOMAD_ALLOC_PORT_http"),
			os.Getenv("FROM_ARG"))
		c.Close()
	}
}

// TestDynamicPortTaskListens runs, on a dev agent, a raw_exec task whose
// group asks for a dynamic port, registered with Nomad's Go client as
// Nomad's CLI sends it. The task (this test binary) reads NOMAD_PORT_http
// and listens on it; the test reads the port from the allocation, as
// `nomad alloc status` does, and connects to it over TCP.
func TestDynamicPortTaskListens(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	a := startDevAgent(t)
	c := nomadClient(t, a.HTTPURL(), "")
	job := &nomad.Job{ID: new("ports"), Datacenters: []string{"dc1"}, TaskGroups: []*nomad.TaskGroup{{
		Name:     new("web"),
		Networks: []*nomad.NetworkResource{{DynamicPorts: []nomad.Port{{Label: "http"}}}},
		Tasks: []*nomad.Task{{Name: "server", Driver: "raw_exec",
			Config: map[string]any{"command": exe, "args": []string{"-test.run=^$"}},
			Env:    map[string]string{portHelperEnv: "1", "FROM_ARG": "${NOMAD_HOST_ADDR_http}"}}},
	}}}
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatalf("register: %v", err)
	}
	defer c.Jobs().Deregister("ports", true, nil)

	// The deadlines are generous: on a loaded machine (every package's
	// race-instrumented tests at once) starting the task, a copy of this
	// large test binary, takes seconds.
	var alloc *nomad.Allocation
	deadline := time.Now().Add(60 * time.Second)
	for alloc == nil || alloc.ClientStatus != "running" {
		if time.Now().After(deadline) {
			t.Fatalf("allocation never ran: %+v", alloc)
		}
		time.Sleep(50 * time.Millisecond)
		stubs, _, err := c.Jobs().Allocations("ports", false, nil)
		if err != nil || len(stubs) == 0 {
			continue
		}
		if alloc, _, err = c.Allocations().Info(stubs[0].ID, nil); err != nil {
			t.Fatal(err)
		}
		if alloc.ClientStatus == "failed" {
			t.Fatalf("allocation failed: %+v", alloc.TaskStates)
		}
	}
	ports := alloc.AllocatedResources.Shared.Ports
	if len(ports) != 1 || ports[0].Label != "http" || ports[0].Value < 20000 || ports[0].Value > 32000 || ports[0].HostIP != "127.0.0.1" {
		t.Fatalf("allocated ports %+v", ports)
	}
	nets := alloc.AllocatedResources.Shared.Networks
	if len(nets) != 1 || len(nets[0].DynamicPorts) != 1 || nets[0].DynamicPorts[0].Value != ports[0].Value || nets[0].IP != "127.0.0.1" {
		t.Fatalf("allocated networks %+v", nets)
	}
	addr := net.JoinHostPort(ports[0].HostIP, strconv.Itoa(ports[0].Value))
	var line string
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			// A listener that is not the task (another process on the
			// port) must not hang the test.
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			line, err = bufio.NewReader(conn).ReadString('\n')
			conn.Close()
			if err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			// Say what the task did: a start that failed to listen (the
			// port taken by another process) exits 3 and restarts.
			var states map[string]*nomad.TaskState
			if a, _, ierr := c.Allocations().Info(alloc.ID, nil); ierr == nil {
				states = a.TaskStates
			}
			var events []string
			for _, ts := range states {
				for _, e := range ts.Events {
					events = append(events, fmt.Sprintf("%s %q exit=%d", e.Type, e.DisplayMessage, e.ExitCode))
				}
			}
			t.Fatalf("task never answered on %s: %v; task events %v", addr, err, events)
		}
	}
	p := strconv.Itoa(ports[0].Value)
	want := fmt.Sprintf("port=%s addr=%s host_port=%s alloc_port=%s arg=%s\n", p, addr, p, p, addr)
	if line != want {
		t.Fatalf("task said %q, want %q", line, want)
	}
}
