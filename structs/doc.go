// Package structs holds Drover's data model: jobs, nodes, evaluations,
// allocations and plans, the request and response types that cross RPC, the
// Raft message types, and typed errors.
//
// Field names and JSON shapes follow Nomad's public HTTP API (the Go module
// github.com/hashicorp/nomad/api), so Nomad users and their tools recognise
// them.
//
// This package must never import another Drover package. Values stored in
// the state store are shared between readers: code that receives one must
// Copy it before changing anything.
package structs
