package autoscaler

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
)

// TestLocalProvider runs a stand-in for the drover binary (a shell loop):
// Create starts it detached with the instance's configuration, is
// idempotent by ID, List finds it by tags from another provider on the
// same directory, the quota file and the quota limit refuse with a
// *QuotaError, and Destroy stops it and removes its directory.
func TestLocalProvider(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "fake-drover")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nwhile true; do sleep 1; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	instDir := filepath.Join(dir, "instances")
	l, err := NewLocal(LocalConfig{Dir: instDir, Binary: bin, Quota: 1, StopTimeout: time.Second,
		Servers: func() []string { return []string{"127.0.0.1:4647"} }, ExtraConfig: `plugin "mock_driver" {}`})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	spec := CreateSpec{ID: "i-1", Pool: "burst", CPU: 1000, MemoryMB: 512,
		Tags: map[string]string{structs.InstanceTagID: "i-1", structs.InstanceTagPool: "burst"},
		Meta: map[string]string{structs.InstanceTagID: "i-1"}}
	in, err := l.Create(ctx, spec)
	if err != nil || !in.Running {
		t.Fatalf("create: %+v %v", in, err)
	}
	t.Cleanup(func() { _ = l.Destroy(ctx, "i-1") })
	raw, err := os.ReadFile(filepath.Join(instDir, "i-1", "config", "10-client.json"))
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		Client struct {
			NodePool        string `json:"node_pool"`
			Servers         []string
			Meta            map[string]string
			CPUTotalCompute int `json:"cpu_total_compute"`
		}
	}
	if err := json.Unmarshal(raw, &conf); err != nil || conf.Client.NodePool != "burst" || conf.Client.Meta[structs.InstanceTagID] != "i-1" ||
		conf.Client.CPUTotalCompute != 1000 || len(conf.Client.Servers) != 1 {
		t.Fatalf("client config %s: %v", raw, err)
	}
	if again, err := l.Create(ctx, spec); err != nil || !again.Running {
		t.Fatalf("second create of the same ID: %+v %v", again, err)
	}
	// Another server's provider on the same directory sees it.
	other, err := NewLocal(LocalConfig{Dir: instDir, Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	list, err := other.List(ctx, map[string]string{structs.InstanceTagPool: "burst"})
	if err != nil || len(list) != 1 || !list[0].Running || list[0].ProviderID != "i-1" {
		t.Fatalf("list: %+v %v", list, err)
	}
	if list, _ := other.List(ctx, map[string]string{structs.InstanceTagPool: "gpu"}); len(list) != 0 {
		t.Fatalf("list of another pool: %+v", list)
	}
	spec2 := spec
	spec2.ID = "i-2"
	if _, err := l.Create(ctx, spec2); !IsQuotaError(err) {
		t.Fatalf("create beyond the quota: %v", err)
	}
	if err := os.WriteFile(filepath.Join(instDir, LocalQuotaFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Create(ctx, spec2); !IsQuotaError(err) {
		t.Fatalf("create with the quota file: %v", err)
	}
	if err := other.Destroy(ctx, "i-1"); err != nil {
		t.Fatal(err)
	}
	if list, _ := l.List(ctx, nil); len(list) != 0 {
		t.Fatalf("after destroy: %+v", list)
	}
	if err := l.Destroy(ctx, "i-1"); err != nil {
		t.Fatalf("destroying a destroyed instance: %v", err)
	}
	var skel Provider = &CloudSkeleton{Name: "cloud"}
	if _, err := skel.Create(ctx, spec); err == nil {
		t.Fatal("the cloud skeleton created")
	}
}
