// Command drover is Drover's single binary: the agent and the CLI.
//
//	drover agent -dev                       # single-node cluster on 127.0.0.1:4646
//	drover job run examples/service.nomad.hcl
//	drover job status ticker
//	drover alloc logs -f <alloc-prefix>
//	drover node status
//	drover operator raft list-peers
//
// Commands that talk to an agent take -address, or read DROVER_ADDR (then
// NOMAD_ADDR), default http://127.0.0.1:4646. Their verbs, flags and
// output follow Nomad's CLI: aligned tables, "Key = Value" blocks, -json on
// every read, short (8-character) IDs unless -verbose, and unique ID
// prefixes accepted wherever an ID is (an ambiguous prefix lists the
// matches and fails). Exit code 0 means success and 1 any error, except
// job run (2: some allocations could not be placed; 1 also when a service
// job's allocation failed or did not start, as Nomad's failed deployment;
// monitor_allocs.go follows the placed allocations) and job plan (1: the
// plan would create or destroy allocations; 255: error).
//
// Each command group lives in its own file (agent.go, status.go,
// operator.go, version.go, job.go, plan.go, node.go, alloc.go, logs.go,
// eval.go, members.go, system.go) and contributes entries to the table in
// commands(). A command is named by its full path ("operator raft
// list-peers"); the dispatcher picks the longest name that prefixes the
// arguments, and a bare group name lists the commands under it. monitor.go
// follows an evaluation with blocking queries (job run, job stop, alloc
// stop); prefix.go resolves ID prefixes. Output is tested against golden
// files in testdata/golden (go test -update rewrites them).
//
// This command must never reach into the server directly: everything but
// `drover agent` goes through the HTTP API (package api), as a remote user
// would.
package main
