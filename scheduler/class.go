package scheduler

import (
	"hash/fnv"
	"sort"
	"strconv"
	"strings"

	"github.com/drover-project/drover/structs"
)

// ComputeNodeClass returns a key shared by nodes that are interchangeable
// for placement: same datacenter, class, pool, non-unique attributes and
// meta, and healthy drivers. Keys under "unique." are left out, as in
// Nomad. Blocked evaluations record eligibility per class; servers should
// store this value in Node.ComputedClass when a node registers or changes.
func ComputeNodeClass(n *structs.Node) string {
	h := fnv.New64a()
	write := func(parts ...string) {
		for _, p := range parts {
			h.Write([]byte(p))
			h.Write([]byte{0})
		}
	}
	write("dc", n.Datacenter, "class", n.NodeClass, "pool", n.NodePool)
	writeMap := func(tag string, m map[string]string) {
		keys := make([]string, 0, len(m))
		for k := range m {
			if !strings.HasPrefix(k, "unique.") {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			write(tag, k, m[k])
		}
	}
	writeMap("attr", n.Attributes)
	writeMap("meta", n.Meta)
	drivers := make([]string, 0, len(n.Drivers))
	for name, d := range n.Drivers {
		if d != nil && d.Detected && d.Healthy {
			drivers = append(drivers, name)
		}
	}
	sort.Strings(drivers)
	write(append([]string{"drivers"}, drivers...)...)
	return "v1:" + strconv.FormatUint(h.Sum64(), 10)
}

// nodeClass is the node's stored computed class, or one computed now.
func nodeClass(n *structs.Node) string {
	if n.ComputedClass != "" {
		return n.ComputedClass
	}
	return ComputeNodeClass(n)
}
