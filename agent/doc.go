// Package agent runs one Drover agent: it loads the agent configuration
// (defaults, then HCL/JSON files, then flags), starts the server, and serves
// Drover's HTTP API, which follows Nomad's paths, methods, JSON shapes and
// headers so that Nomad's Go client (github.com/hashicorp/nomad/api) works
// against it.
//
// Usage:
//
//	cfg, err := agent.LoadConfig(os.Args[2:], os.Stderr)
//	a, err := agent.NewAgent(cfg, nil)
//	defer a.Shutdown()
//	fmt.Println(a.HTTPURL())
//
// The HTTP layer is a translation layer only: each request becomes one RPC
// to the server (server.Server.RPC) through the small Server interface, so
// handlers are tested with a fake. Bad input (malformed or wrongly typed
// JSON, a missing job, an oversized body, bad query parameters) is answered
// before any RPC.
//
// This package must never touch the state store or Raft directly, never
// validate or canonicalize jobs itself (the server does, once), and never
// match on error text: errors are mapped to HTTP status codes by
// structs.CodeOf.
package agent
