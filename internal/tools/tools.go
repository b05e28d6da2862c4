//go:build tools

// Package tools pins the project's direct dependencies in go.mod before
// every package that uses them exists, so that parallel work never races to
// edit go.mod. Remove an import here once real code imports it.
package tools

import (
	_ "github.com/hashicorp/go-hclog"
	_ "github.com/hashicorp/go-memdb"
	_ "github.com/hashicorp/go-metrics"
	_ "github.com/hashicorp/hcl/v2"
	_ "github.com/hashicorp/hcl/v2/gohcl"
	_ "github.com/hashicorp/hcl/v2/hclsimple"
	_ "github.com/hashicorp/hcl/v2/hclsyntax"
	_ "github.com/hashicorp/net-rpc-msgpackrpc/v2"
	_ "github.com/hashicorp/nomad/api"
	_ "github.com/hashicorp/raft"
	_ "github.com/hashicorp/raft-boltdb/v2"
	_ "github.com/hashicorp/yamux"
	_ "github.com/zclconf/go-cty/cty"
	_ "go.etcd.io/bbolt"
	_ "pgregory.net/rapid"
)
