package structs

import (
	"strings"
	"testing"
	"time"
)

func TestValidateDisconnect(t *testing.T) {
	d := func(v time.Duration) *time.Duration { return &v }
	f := false
	tests := []struct {
		name    string
		jobType string
		tg      TaskGroup
		want    []string // substrings of the field errors, in any order; none: valid
	}{
		{"stop after", JobTypeService, TaskGroup{StopAfterClientDisconnect: d(time.Minute)}, nil},
		{"stop after in batch", JobTypeBatch, TaskGroup{StopAfterClientDisconnect: d(time.Minute)}, nil},
		{"stop after zero", JobTypeService, TaskGroup{StopAfterClientDisconnect: d(0)},
			[]string{"StopAfterClientDisconnect: stop_after_client_disconnect must be a positive duration"}},
		{"stop after in system", JobTypeSystem, TaskGroup{StopAfterClientDisconnect: d(time.Minute)},
			[]string{"StopAfterClientDisconnect: stop_after_client_disconnect can only be set in batch and service jobs"}},
		{"max client disconnect", JobTypeService, TaskGroup{MaxClientDisconnect: d(time.Minute)}, nil},
		{"max client disconnect in system", JobTypeSystem, TaskGroup{MaxClientDisconnect: d(time.Minute)},
			[]string{"MaxClientDisconnect: Drover does not support max_client_disconnect in system jobs"}},
		{"max client disconnect negative, with stop after", JobTypeService,
			TaskGroup{MaxClientDisconnect: d(-time.Minute), StopAfterClientDisconnect: d(time.Minute)},
			[]string{"MaxClientDisconnect: max_client_disconnect cannot be negative",
				"MaxClientDisconnect: a group cannot have both max_client_disconnect and stop_after_client_disconnect"}},
		{"disconnect stop on client", JobTypeService, TaskGroup{Disconnect: &DisconnectStrategy{StopOnClientAfter: d(time.Minute)}}, nil},
		{"disconnect defaults", JobTypeService, TaskGroup{Disconnect: &DisconnectStrategy{Reconcile: ReconcileOptionKeepOriginal}}, nil},
		{"disconnect mixed with the old style", JobTypeService,
			TaskGroup{StopAfterClientDisconnect: d(time.Minute), Disconnect: &DisconnectStrategy{StopOnClientAfter: d(time.Minute)}},
			[]string{"Disconnect: a group cannot have both a disconnect block and stop_after_client_disconnect"}},
		{"disconnect negative", JobTypeService,
			TaskGroup{Disconnect: &DisconnectStrategy{LostAfter: -1, StopOnClientAfter: d(-1)}},
			[]string{"Disconnect.LostAfter: lost_after cannot be a negative duration",
				"Disconnect.StopOnClientAfter: stop_on_client_after cannot be a negative duration",
				"Disconnect: a disconnect block cannot have both lost_after and stop_on_client_after"}},
		{"disconnect stop on system", JobTypeSystem, TaskGroup{Disconnect: &DisconnectStrategy{StopOnClientAfter: d(time.Minute)}},
			[]string{"Disconnect.StopOnClientAfter: stop_on_client_after can only be used with service or batch jobs"}},
		{"disconnect reconcile", JobTypeService, TaskGroup{Disconnect: &DisconnectStrategy{Reconcile: "newest"}},
			[]string{`Disconnect.Reconcile: reconcile must be best_score, keep_original, keep_replacement or longest_running; got "newest"`}},
		{"disconnect lost after", JobTypeService, TaskGroup{Disconnect: &DisconnectStrategy{LostAfter: time.Hour, Replace: &f}}, nil},
		{"disconnect lost after in sysbatch", JobTypeSysBatch, TaskGroup{Disconnect: &DisconnectStrategy{LostAfter: time.Hour}},
			[]string{"Disconnect.LostAfter: Drover does not support lost_after in sysbatch jobs"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := &validator{}
			tc.tg.validateDisconnect(v, "TaskGroups[0]", tc.jobType)
			var got []string
			for _, e := range v.errs {
				got = append(got, e.String())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("errors %q, want %d like %q", got, len(tc.want), tc.want)
			}
			for _, w := range tc.want {
				found := false
				for _, g := range got {
					if strings.Contains(g, "TaskGroups[0]."+w) {
						found = true
					}
				}
				if !found {
					t.Errorf("no error like %q in %q", w, got)
				}
			}
		})
	}
}

func TestDisconnectWindow(t *testing.T) {
	d := func(v time.Duration) *time.Duration { return &v }
	f := false
	if w, r, rec, ok := (&TaskGroup{MaxClientDisconnect: d(time.Hour)}).DisconnectWindow(); !ok || w != time.Hour || !r || rec != ReconcileOptionBestScore {
		t.Fatalf("max_client_disconnect window %v %v %q %v", w, r, rec, ok)
	}
	tg := &TaskGroup{Disconnect: &DisconnectStrategy{LostAfter: time.Minute, Replace: &f, Reconcile: ReconcileOptionKeepOriginal}}
	if w, r, rec, ok := tg.DisconnectWindow(); !ok || w != time.Minute || r || rec != ReconcileOptionKeepOriginal {
		t.Fatalf("lost_after window %v %v %q %v", w, r, rec, ok)
	}
	for _, tg := range []*TaskGroup{nil, {}, {Disconnect: &DisconnectStrategy{StopOnClientAfter: d(time.Minute)}}} {
		if _, _, _, ok := tg.DisconnectWindow(); ok {
			t.Fatalf("window for %+v", tg)
		}
	}
}

func TestStopAfterFence(t *testing.T) {
	d := func(v time.Duration) *time.Duration { return &v }
	tg := &TaskGroup{StopAfterClientDisconnect: d(30 * time.Second),
		Tasks: []*Task{{KillTimeout: 2 * time.Second}, {KillTimeout: 12 * time.Second}}}
	if got, ok := tg.StopAfterFence(); !ok || got != 30*time.Second+12*time.Second+300*time.Millisecond+time.Second {
		t.Fatalf("fence = %v, %v", got, ok)
	}
	tg = &TaskGroup{Disconnect: &DisconnectStrategy{StopOnClientAfter: d(10 * time.Second)}, Tasks: []*Task{{KillTimeout: DefaultKillTimeout}}}
	if got, ok := tg.StopAfterFence(); !ok || got != 10*time.Second+DefaultKillTimeout+100*time.Millisecond+time.Second {
		t.Fatalf("fence = %v, %v", got, ok)
	}
	for _, tg := range []*TaskGroup{nil, {}, {Disconnect: &DisconnectStrategy{StopOnClientAfter: d(0)}}} {
		if _, ok := tg.StopAfterFence(); ok {
			t.Fatalf("fence for %+v", tg)
		}
	}
	j := &Job{Type: JobTypeService, TaskGroups: []*TaskGroup{{Name: "g", Disconnect: &DisconnectStrategy{}}}}
	j.TaskGroups[0].canonicalize(j)
	if ds := j.TaskGroups[0].Disconnect; ds.Replace == nil || !*ds.Replace || ds.Reconcile != ReconcileOptionBestScore {
		t.Fatalf("canonical disconnect block %+v", ds)
	}
}
