package main

import (
	"testing"

	"github.com/drover-project/drover/agent/client/driver"
	"github.com/drover-project/drover/structs"
)

func TestTaskUsageCells(t *testing.T) {
	tr := &structs.AllocatedTaskResources{Cpu: structs.AllocatedCpuResources{CpuShares: 500},
		Memory: structs.AllocatedMemoryResources{MemoryMB: 256}}
	if cpu, mem := taskUsage(tr, nil, "web"); cpu != "500 MHz" || mem != "256 MiB" {
		t.Fatalf("without usage: %q %q", cpu, mem)
	}
	stats := &driver.AllocResourceUsage{Tasks: map[string]*driver.TaskResourceUsage{"web": {ResourceUsage: &driver.ResourceUsage{
		MemoryStats: &driver.MemoryStats{RSS: 12 << 20}, CpuStats: &driver.CpuStats{TotalTicks: 42.7}}}}}
	if cpu, mem := taskUsage(tr, stats, "web"); cpu != "42/500 MHz" || mem != "12.0 MiB/256 MiB" {
		t.Fatalf("with usage: %q %q", cpu, mem)
	}
	// Drivers that measure only usage (no RSS) show it instead.
	stats.Tasks["web"].ResourceUsage.MemoryStats = &driver.MemoryStats{Usage: 3 << 10}
	if _, mem := taskUsage(tr, stats, "web"); mem != "3.0 KiB/256 MiB" {
		t.Fatalf("usage only: %q", mem)
	}
}
