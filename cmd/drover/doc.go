// Command drover is Drover's single binary: the agent and the CLI.
//
//	drover agent -dev                       # single-node cluster on 127.0.0.1:4646
//	drover status                           # leader and Raft peers
//	drover operator raft list-peers
//
// Commands that talk to an agent take -address, or read DROVER_ADDR (then
// NOMAD_ADDR), default http://127.0.0.1:4646. Exit code 0 means success,
// 1 any error.
//
// Each command group lives in its own file (agent.go, status.go,
// operator.go, version.go) and contributes entries to the table in
// commands(). A command is named by its full path ("operator raft
// list-peers"); the dispatcher picks the longest name that prefixes the
// arguments, and a bare group name lists the commands under it.
//
// This command must never reach into the server directly: everything but
// `drover agent` goes through the HTTP API (package api), as a remote user
// would.
package main
