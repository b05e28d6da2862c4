package server

import (
	metrics "github.com/hashicorp/go-metrics"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// Autoscaled pool gauges (docs/operations.md), emitted by the leader with
// the queue gauges. The counters and the boot time sample are the
// autoscaler's (autoscaler.Metric*).
var (
	// metricPoolInstances: instances by pool, type and state.
	metricPoolInstances = []string{"drover", "autoscaler", "instances"}
	// metricPoolPrice: the price per hour of the instances by pool, type
	// and state (gone ones cost nothing).
	metricPoolPrice = []string{"drover", "autoscaler", "price_per_hour"}
)

// emitPoolGauges sets, for every autoscaled pool, every type it names or
// its instances have and every state, the instance count and the price
// per hour (zero included, so a state left empty reads zero).
func emitPoolGauges(st *state.StateStore, sink gaugeSink) error {
	configs, err := st.PoolAutoscalers(nil)
	if err != nil || len(configs) == 0 {
		return err
	}
	type key struct{ typ, state string }
	for _, c := range configs {
		list, err := st.PoolInstances(nil, c.Pool)
		if err != nil {
			return err
		}
		count := map[key]int{}
		price := map[key]float64{}
		types := map[string]bool{}
		for _, t := range c.InstanceTypes {
			if t != nil {
				types[t.Name] = true
			}
		}
		for _, in := range list {
			types[in.Type] = true
			k := key{in.Type, in.State}
			count[k]++
			if in.State != structs.InstanceGone {
				price[k] += in.PricePerHour
			}
		}
		for typ := range types {
			for _, s := range structs.InstanceStates {
				labels := []metrics.Label{{Name: "pool", Value: c.Pool}, {Name: "type", Value: typ}, {Name: "state", Value: s}}
				sink.SetGaugeWithLabels(metricPoolInstances, float32(count[key{typ, s}]), labels)
				sink.SetGaugeWithLabels(metricPoolPrice, float32(price[key{typ, s}]), labels)
			}
		}
	}
	return nil
}
