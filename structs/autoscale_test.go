package structs

import (
	"strings"
	"testing"
	"time"
)

// TestPoolAutoscalerValidate: defaults fill the timers and provider
// types; every invalid field is named.
func TestPoolAutoscalerValidate(t *testing.T) {
	ok := func() *PoolAutoscaler {
		a := &PoolAutoscaler{Pool: "burst", Provider: "local", Max: 3,
			InstanceTypes: []*InstanceType{{Name: "small", CPU: 1000, MemoryMB: 512, PricePerHour: 0.1}}}
		a.Canonicalize()
		return a
	}
	a := ok()
	if err := a.Validate(); err != nil {
		t.Fatal(err)
	}
	if a.BootTimeout != DefaultAutoscaleBootTimeout || a.IdleTimeout != DefaultAutoscaleIdleTimeout ||
		a.QuotaBackoff != DefaultAutoscaleQuotaBackoff || a.InstanceTypes[0].ProviderType != "small" {
		t.Fatalf("defaults: %+v", a)
	}
	cases := []struct {
		field  string
		change func(a *PoolAutoscaler)
	}{
		{"Pool", func(a *PoolAutoscaler) { a.Pool = "default" }},
		{"Pool", func(a *PoolAutoscaler) { a.Pool = "no spaces" }},
		{"Provider", func(a *PoolAutoscaler) { a.Provider = "" }},
		{"InstanceTypes", func(a *PoolAutoscaler) { a.InstanceTypes = nil }},
		{"InstanceTypes[0].CPU", func(a *PoolAutoscaler) { a.InstanceTypes[0].CPU = 0 }},
		{"InstanceTypes[0].MemoryMB", func(a *PoolAutoscaler) { a.InstanceTypes[0].MemoryMB = -1 }},
		{"InstanceTypes[0].PricePerHour", func(a *PoolAutoscaler) { a.InstanceTypes[0].PricePerHour = -1 }},
		{"InstanceTypes[1].Name", func(a *PoolAutoscaler) { a.InstanceTypes = append(a.InstanceTypes, a.InstanceTypes[0]) }},
		{"Max", func(a *PoolAutoscaler) { a.Max = 0 }},
		{"Min", func(a *PoolAutoscaler) { a.Min = 4 }},
		{"IdleTimeout", func(a *PoolAutoscaler) { a.IdleTimeout = -time.Second }},
		{"MaxBooting", func(a *PoolAutoscaler) { a.MaxBooting = -1 }},
	}
	for _, tc := range cases {
		a := ok()
		tc.change(a)
		err := a.Validate()
		ve, isVE := err.(*ValidationError)
		if !isVE || !strings.Contains(err.Error(), tc.field) || ve.Errors[0].Field != tc.field {
			t.Errorf("%s: %v", tc.field, err)
		}
	}
	c := ok().Copy()
	c.InstanceTypes[0].CPU = 1
	if a.InstanceTypes[0].CPU != 1000 {
		t.Fatal("Copy shares instance types")
	}
}
