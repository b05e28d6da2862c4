// Package template renders a task's template blocks, as Nomad's client
// does, with consul-template's runner (github.com/hashicorp/consul-template
// manager.Runner): its language, its functions, and its watcher, whose
// blocking queries against the local agent's HTTP API (nomadService,
// nomadServices, nomadVar, nomadVarList, nomadVarExists) bring new data, so
// a template re-renders when what it reads changes.
//
// A Manager is one task's templates. The task runner creates it before the
// task starts, calls Render, which returns once every template has
// rendered (blocking while data is missing, with "Template" task events
// naming what is missing), reads Env (the KEY=VALUE lines of env = true
// templates), starts the task, and calls Stop when the task is done. After
// the first rendering, the Manager applies each template's change_mode
// through Hooks: restart, signal or script, after a random splay.
//
// Writing never leaves the allocation directory: destinations are resolved
// against the task directory and checked, and every file is written
// through an os.Root opened on the allocation directory, so a symlink that
// leads out of it is refused (CVE-2024-1329). Sources are read through an
// os.Root on the task directory. It must never write anywhere else, and
// never talk to Consul or Vault (their functions are refused at
// registration, see structs/templatespec, and disabled here as well).
package template
