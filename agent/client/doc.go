// Package client is Drover's client agent: the part that runs on every
// machine, joins the cluster as a node, and runs the allocations the
// servers place on it as real processes (raw_exec) or simulated tasks
// (mock_driver).
//
//	          register / heartbeat (Node.Register, Node.UpdateStatus)
//	Client ─────────────────────────────────────────────────────► servers
//	  │      watch (Node.GetClientAllocs, blocking) + Alloc.GetAllocs  ▲
//	  │                                                               │
//	  ├─► AllocRunner per allocation ─► task runner per task ─► driver │
//	  │        │ every change                                          │
//	  │        ▼                                                       │
//	  └── update batcher: latest state per alloc, every 200 ms ────────┘
//	                       (Node.UpdateAlloc)
//
// The client fingerprints the machine (package fingerprint), persists its
// node ID in <data dir>/client/node-id and its state in
// <data dir>/client/state.db (package state), and runs allocations under
// <data dir>/alloc/<alloc id>/ (package allocdir). On start it restores
// the allocations it had and re-attaches to their still-running tasks
// before it contacts any server; the servers' view then decides what keeps
// running. A client that cannot reach any server keeps running its tasks,
// fails over between the servers it knows, and registers again once one
// answers. A server that does not answer a heartbeat within a quarter of
// the TTL is left for the next one at once, and the allocation watch
// follows (servers.go, node.go; docs/reliability.md "A client's
// servers"). Shutdown leaves tasks running for the next client.
//
// The client talks to servers only through a Transport (server/pool in
// production, an in-process server in -dev, fakes in tests) and never
// imports package server or touches Raft or the state store.
package client
