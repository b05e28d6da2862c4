package scheduler

import (

	"github.com/drover-project/drover/structs"
)

// nodeClass is the node's stored computed class, or one computed now.
func nodeClass(n *structs.Node) string {
	return n.Class()
}
