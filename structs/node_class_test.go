package structs

import "testing"

func TestComputeClass(t *testing.T) {
	base := func() *Node {
		return &Node{ID: "a", Name: "a", Datacenter: "dc1", NodeClass: "web",
			Attributes: map[string]string{"kernel.name": "linux", "unique.hostname": "a"},
			Meta:       map[string]string{"rack": "r1"},
			Drivers:    map[string]*DriverInfo{"mock": {Detected: true, Healthy: true}}}
	}
	ref := base()
	ref.ComputeClass()
	tests := []struct {
		name   string
		change func(*Node)
		same   bool
	}{
		{"unique attribute ignored", func(n *Node) { n.ID = "b"; n.Attributes["unique.hostname"] = "b" }, true},
		{"attribute counts", func(n *Node) { n.Attributes["kernel.name"] = "darwin" }, false},
		{"meta counts", func(n *Node) { n.Meta["rack"] = "r2" }, false},
		{"datacenter counts", func(n *Node) { n.Datacenter = "dc2" }, false},
		{"node class counts", func(n *Node) { n.NodeClass = "db" }, false},
		{"unhealthy driver counts", func(n *Node) { n.Drivers["mock"].Healthy = false }, false},
		{"key/value boundary", func(n *Node) { n.Meta = map[string]string{"rac": "kr1"} }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := base()
			tc.change(n)
			n.ComputeClass()
			if (n.ComputedClass == ref.ComputedClass) != tc.same {
				t.Fatalf("class %s vs %s, same=%v", n.ComputedClass, ref.ComputedClass, tc.same)
			}
		})
	}
}
