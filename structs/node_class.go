package structs

import (
	"encoding/binary"
	"hash/fnv"
	"sort"
	"strings"
)

// uniquePrefix marks attributes and meta keys that are unique per node
// (IDs, hostnames, addresses). They never enter the computed class, and a
// constraint on them "escapes" the class: its answer cannot be shared
// between nodes of the same class.
const uniquePrefix = "unique."

// IsUniqueTarget reports whether a constraint target refers to per-node
// unique data (${node.unique.*}, ${attr.unique.*}, ${meta.unique.*}).
func IsUniqueTarget(target string) bool {
	return strings.Contains(target, "unique.")
}

// ComputeClass sets n.ComputedClass to a hash of everything that
// constraints and feasibility checks can see and that nodes commonly share:
// datacenter, node class, pool, non-unique attributes and meta, and which
// drivers are healthy. Nodes with equal classes answer every non-unique
// constraint the same way, so the scheduler checks one node per class and
// blocked evaluations unblock only for classes that could help.
func (n *Node) ComputeClass() {
	n.ComputedClass = n.computeClass()
}

// Class returns the stored computed class, or computes it when the node
// has none yet (a node built in a test, or registered by an old client).
func (n *Node) Class() string {
	if n.ComputedClass != "" {
		return n.ComputedClass
	}
	return n.computeClass()
}

func (n *Node) computeClass() string {
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
			if !strings.HasPrefix(k, uniquePrefix) {
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
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], h.Sum64())
	return "v1:" + hexString(b[:])
}

func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, len(b)*2)
	for i, c := range b {
		out[2*i] = digits[c>>4]
		out[2*i+1] = digits[c&0xf]
	}
	return string(out)
}
