// Package jobspec parses Drover job files into *structs.Job.
//
// Job files use Nomad's job specification language (HCL2, parsed with
// hashicorp/hcl/v2) for the parts of it Drover runs: job, group and task
// blocks with constraint, restart, reschedule, migrate, resources, config,
// env, meta and template. HCL2 variables (variable blocks, -var and -var-file
// overrides), locals and the usual functions (upper, format, join, try, ...)
// work as they do in Nomad. Runtime interpolations such as
// "${attr.kernel.name}" or "${NOMAD_TASK_DIR}" are kept as text for the
// scheduler and the client to resolve. Files whose first character is '{'
// are JSON in the shape of Nomad's HTTP API ({"Job": {...}} or the bare job).
//
// Usage:
//
//	job, err := jobspec.ParseFile("web.nomad.hcl", &jobspec.Options{
//		Vars: map[string]string{"count": "3"},
//	})
//	var perr *jobspec.Error
//	if errors.As(err, &perr) { for _, d := range perr.Diags { ... } }
//
// Every problem is reported with its file, line and column, all at once.
// A block or argument Drover does not support is an error, never silently
// ignored; one Nomad has but Drover does not says so by name.
//
// This package only turns text into a job: it must never canonicalize or
// validate the job (the server does, once), never read the environment or
// files other than those it is given, and never import anything but
// structs and the HCL/cty libraries.
package jobspec
