package structs

import (
	"path"
	"slices"
	"strings"
)

// Volume types of a group's volume block. Only host volumes are built;
// csi is Nomad's and refused by name.
const (
	VolumeTypeHost = "host"
	VolumeTypeCSI  = "csi"
)

// VolumeMountPropagationPrivate is the one mount propagation mode Drover
// has (Nomad's default): nothing mounted later on either side is seen
// by the other.
const VolumeMountPropagationPrivate = "private"

// ClientHostVolumeConfig is a host_volume of a client's configuration, as
// fingerprinted on its node (Node.HostVolumes, keyed by name, Nomad's
// shape): a directory of the host that groups may ask for by name.
type ClientHostVolumeConfig struct {
	Name     string
	Path     string
	ReadOnly bool
}

// VolumeRequest is a group's volume block: the host volume named Source
// that the group's allocations need on their node, mounted by the tasks
// whose volume_mount names it. Only Type "host" is built.
type VolumeRequest struct {
	Name     string
	Type     string
	Source   string
	ReadOnly bool
}

// VolumeMount is a task's volume_mount block: the group volume Volume
// mounted at Destination, a path inside the task directory (a leading
// "/" is the task directory's root, as in a chroot). ReadOnly mounts it
// read-only whatever the volume allows.
type VolumeMount struct {
	Volume      string
	Destination string
	ReadOnly    bool
}

// EphemeralDisk is a group's ephemeral_disk block: the disk its
// allocations count against the node (SizeMB, added to the tasks' own
// disk asks), and whether a replacement keeps the data of the allocation
// it replaces: Sticky prefers the previous node and moves the alloc/data
// and local directories over when it lands there. Migrate (copying the
// data from another node) is refused by name.
type EphemeralDisk struct {
	Sticky  bool
	SizeMB  int
	Migrate bool
}

// DefaultEphemeralDiskMB is Nomad's ephemeral_disk size when the block
// leaves it out.
const DefaultEphemeralDiskMB = 300

// minEphemeralDiskMB is Nomad's smallest ephemeral_disk size.
const minEphemeralDiskMB = 10

// HasVolumes reports whether the group asks for any volume.
func (tg *TaskGroup) HasVolumes() bool { return len(tg.Volumes) > 0 }

// StickyDisk reports whether the group's replacements keep their
// predecessor's data on the same node.
func (tg *TaskGroup) StickyDisk() bool { return tg.EphemeralDisk != nil && tg.EphemeralDisk.Sticky }

// validateVolumes checks the group's volume blocks and its tasks'
// volume_mount blocks against them.
func (tg *TaskGroup) validateVolumes(v *validator, p string) {
	for _, name := range sortedVolumeNames(tg.Volumes) {
		vr := tg.Volumes[name]
		vp := p + `.Volumes["` + name + `"]`
		if vr == nil {
			v.add(vp, "must not be null")
			continue
		}
		if vr.Name != "" && vr.Name != name {
			v.add(join(vp, "Name"), "must be the block's label %q; got %q", name, vr.Name)
		}
		switch vr.Type {
		case VolumeTypeHost:
		case VolumeTypeCSI:
			v.add(join(vp, "Type"), "Drover does not support CSI volumes (type = \"csi\"); use a host volume (type = \"host\") that the client's host_volume block offers")
		case "":
			v.add(join(vp, "Type"), "must be set: \"host\"")
		default:
			v.add(join(vp, "Type"), "unknown volume type %q: must be \"host\"", vr.Type)
		}
		if vr.Source == "" {
			v.add(join(vp, "Source"), "must name the client's host_volume")
		}
	}
	if ed := tg.EphemeralDisk; ed != nil {
		if ed.SizeMB < minEphemeralDiskMB || ed.SizeMB > MaxTaskDiskMB {
			v.add(join(p, "EphemeralDisk.SizeMB"), "must be between %d and %d (MB), as in Nomad; got %d", minEphemeralDiskMB, MaxTaskDiskMB, ed.SizeMB)
		}
		if ed.Migrate {
			v.add(join(p, "EphemeralDisk.Migrate"), "Drover does not support ephemeral_disk migrate (copying an allocation's data from another node); sticky = true keeps it on the same node")
		}
		// Each task's logs must fit in the disk, as Nomad checks (a task
		// without a logs block has the defaults).
		for i, t := range tg.Tasks {
			if t == nil {
				continue
			}
			lc := t.LogConfig
			if lc == nil {
				lc = DefaultLogConfig()
			}
			if logMB := lc.MaxFiles * lc.MaxFileSizeMB; !lc.Disabled && logMB >= ed.SizeMB {
				v.add(join(p, "EphemeralDisk.SizeMB"), "task %q's logs may take %d MB (max_files x max_file_size, Tasks[%d]); the disk must be larger; got %d",
					t.Name, logMB, i, ed.SizeMB)
			}
		}
	}
	for i, t := range tg.Tasks {
		if t == nil {
			continue
		}
		tp := join(p, indexed("Tasks", i))
		for k, vm := range t.VolumeMounts {
			mp := join(tp, indexed("VolumeMounts", k))
			if vm == nil {
				v.add(mp, "must not be null")
				continue
			}
			switch {
			case vm.Volume == "":
				v.add(join(mp, "Volume"), "must name one of the group's volume blocks")
			case tg.Volumes[vm.Volume] == nil:
				v.add(join(mp, "Volume"), "the group has no volume %q%s", vm.Volume, volumeChoices(tg.Volumes))
			}
			if msg := checkMountDestination(vm.Destination); msg != "" {
				v.add(join(mp, "Destination"), "%s", msg)
			}
		}
	}
}

// checkMountDestination says what is wrong with a volume_mount
// destination, or "".
func checkMountDestination(dest string) string {
	switch {
	case dest == "":
		return "must be set: a path inside the task directory"
	case strings.ContainsRune(dest, 0):
		return "must not contain a NUL byte"
	case !isLocalPath(strings.TrimPrefix(dest, "/")):
		return "must stay inside the task directory (no \"..\" escapes); got " + quoteStr(dest)
	case MountDestination(dest) == "":
		return "must be a path inside the task directory, not the directory itself; got " + quoteStr(dest)
	}
	return ""
}

// MountDestination is a volume_mount destination relative to the task
// directory, cleaned ("" for the directory itself or a path that leaves
// it).
func MountDestination(dest string) string {
	rel := strings.TrimPrefix(dest, "/")
	if !isLocalPath(rel) {
		return ""
	}
	rel = path.Clean(rel)
	if rel == "." {
		return ""
	}
	return rel
}

// isLocalPath reports whether a slash-separated relative path stays below
// its base (no "..", not absolute).
func isLocalPath(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") {
		return p == ""
	}
	depth := 0
	for _, part := range strings.Split(p, "/") {
		switch part {
		case "", ".":
		case "..":
			depth--
			if depth < 0 {
				return false
			}
		default:
			depth++
		}
	}
	return true
}

func quoteStr(s string) string { return `"` + s + `"` }

func volumeChoices(vols map[string]*VolumeRequest) string {
	if len(vols) == 0 {
		return " (it has no volume block)"
	}
	return "; it has " + strings.Join(sortedVolumeNames(vols), ", ")
}

func sortedVolumeNames(vols map[string]*VolumeRequest) []string {
	names := make([]string, 0, len(vols))
	for n := range vols {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
