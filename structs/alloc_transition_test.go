package structs

import "testing"

func TestDesiredTransitionMerge(t *testing.T) {
	yes, no := true, false
	d := DesiredTransition{Migrate: &no, Reschedule: &yes}
	d.Merge(&DesiredTransition{Migrate: &yes})
	d.Merge(nil)
	if !d.ShouldMigrate() || d.Reschedule == nil || !*d.Reschedule || d.ForceReschedule != nil {
		t.Fatalf("merged %+v", d)
	}
}
