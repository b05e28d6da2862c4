package agent

import (
	"net/http"
	"strings"
	"testing"

	nomad "github.com/hashicorp/nomad/api"
)

// TestSchedulerConfigNomadClient drives /v1/operator/scheduler/configuration
// with Nomad's Go client: Nomad's default until set, a check-and-set that
// applies and one with a stale index that does not (Updated false,
// nothing written), a plain set, and settings Drover does not implement
// refused by name with 400.
func TestSchedulerConfigNomadClient(t *testing.T) {
	a := startDevAgent(t)
	c := nomadClient(t, a.HTTPURL(), "")
	op := c.Operator()

	got, _, err := op.SchedulerGetConfiguration(nil)
	if err != nil {
		t.Fatal(err)
	}
	if sc := got.SchedulerConfig; sc.SchedulerAlgorithm != nomad.SchedulerAlgorithmBinpack || !sc.PreemptionConfig.SystemSchedulerEnabled ||
		sc.PreemptionConfig.ServiceSchedulerEnabled || sc.PreemptionConfig.BatchSchedulerEnabled || sc.PreemptionConfig.SysBatchSchedulerEnabled || sc.ModifyIndex != 0 {
		t.Fatalf("default configuration: %+v", sc)
	}

	conf := *got.SchedulerConfig
	conf.SchedulerAlgorithm = nomad.SchedulerAlgorithmSpread
	conf.PreemptionConfig.ServiceSchedulerEnabled = true
	out, wm, err := op.SchedulerCASConfiguration(&conf, nil)
	if err != nil || !out.Updated || wm.LastIndex == 0 {
		t.Fatalf("CAS from 0: %+v %+v %v", out, wm, err)
	}
	got, qm, err := op.SchedulerGetConfiguration(nil)
	if err != nil || got.SchedulerConfig.SchedulerAlgorithm != nomad.SchedulerAlgorithmSpread || !got.SchedulerConfig.PreemptionConfig.ServiceSchedulerEnabled ||
		got.SchedulerConfig.ModifyIndex != wm.LastIndex || qm.LastIndex != wm.LastIndex {
		t.Fatalf("after CAS: %+v %+v %v", got.SchedulerConfig, qm, err)
	}

	stale := conf // ModifyIndex 0: no longer the stored one
	stale.PreemptionConfig.BatchSchedulerEnabled = true
	if out, _, err := op.SchedulerCASConfiguration(&stale, nil); err != nil || out.Updated {
		t.Fatalf("stale CAS: %+v %v", out, err)
	}
	if got, _, _ := op.SchedulerGetConfiguration(nil); got.SchedulerConfig.PreemptionConfig.BatchSchedulerEnabled {
		t.Fatal("a stale CAS was written")
	}

	if out, _, err := op.SchedulerSetConfiguration(&nomad.SchedulerConfiguration{SchedulerAlgorithm: nomad.SchedulerAlgorithmBinpack}, nil); err != nil || !out.Updated {
		t.Fatalf("set: %+v %v", out, err)
	}
	got, _, _ = op.SchedulerGetConfiguration(nil)
	if sc := got.SchedulerConfig; sc.SchedulerAlgorithm != nomad.SchedulerAlgorithmBinpack || sc.PreemptionConfig.SystemSchedulerEnabled {
		t.Fatalf("a plain set replaces the whole configuration: %+v", sc)
	}

	for field, conf := range map[string]*nomad.SchedulerConfiguration{
		"MemoryOversubscriptionEnabled": {MemoryOversubscriptionEnabled: true},
		"RejectJobRegistration":         {RejectJobRegistration: true},
		"PauseEvalBroker":               {PauseEvalBroker: true},
		"NodeLimitForFeasibilityChecks": {NodeLimitForFeasibilityChecks: 50},
		"SchedulerAlgorithm":            {SchedulerAlgorithm: "worstfit"},
	} {
		_, _, err := op.SchedulerSetConfiguration(conf, nil)
		if statusOf(err) != http.StatusBadRequest || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v, want 400 naming the field", field, err)
		}
	}
}
