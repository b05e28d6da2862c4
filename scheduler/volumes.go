package scheduler

import (
	"slices"
	"strconv"

	"github.com/drover-project/drover/structs"
)

// hostVolumeCheck filters nodes without a host volume a group's volume
// block asks for, or with only a read-only one when the group needs to
// write to it. Host volumes are not in the computed class, so the check
// escapes it. A group without volume blocks gets no such stage.
type hostVolumeCheck struct {
	source   string
	readOnly bool // the group asks only to read
}

// newHostVolumeChecks returns one check per host volume source the group
// asks for (a source asked for writable by any of its blocks needs a
// writable volume), in source order.
func newHostVolumeChecks(tg *structs.TaskGroup) []hostVolumeCheck {
	if !tg.HasVolumes() {
		return nil
	}
	need := map[string]bool{} // source -> read only
	for _, v := range tg.Volumes {
		if v == nil || v.Type != structs.VolumeTypeHost {
			continue
		}
		ro, seen := need[v.Source]
		need[v.Source] = v.ReadOnly && (ro || !seen)
	}
	out := make([]hostVolumeCheck, 0, len(need))
	for src, ro := range need {
		out = append(out, hostVolumeCheck{source: src, readOnly: ro})
	}
	slices.SortFunc(out, func(a, b hostVolumeCheck) int {
		switch {
		case a.source < b.source:
			return -1
		case a.source > b.source:
			return 1
		}
		return 0
	})
	return out
}

func (c hostVolumeCheck) feasible(n *structs.Node) bool {
	hv := n.HostVolumes[c.source]
	return hv != nil && (c.readOnly || !hv.ReadOnly)
}

func (c hostVolumeCheck) reasonText() string {
	if c.readOnly {
		return "missing compatible host volume " + strconv.Quote(c.source)
	}
	return "missing compatible host volume " + strconv.Quote(c.source) + " (writable)"
}

func (c hostVolumeCheck) escapesClass() bool { return true } // volumes are not in the computed class
