//go:build tools

// Package tools pins dependencies in go.mod before any package imports
// them, so that parallel work never races to edit go.mod. Remove an import
// here once real code imports it.
package tools

import (
	_ "go.etcd.io/bbolt" // client state (client agent)
)
