//go:build tools

// Package tools pins dependencies in go.mod before any package imports
// them, so that parallel work never races to edit go.mod. Remove an import
// here once real code imports it. It also pins the tools that `go run`
// runs (codecgen, for make generate), which no code imports.
package tools

import (
	_ "github.com/hashicorp/go-msgpack/v2/codec/codecgen" // make generate (structs/structs.generated.go)
	_ "go.etcd.io/bbolt"                                  // client state (client agent)
)
