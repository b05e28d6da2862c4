// Package driver defines the task driver contract of the Drover client: a
// driver starts a task's process (or container, or nothing at all, for the
// mock), returns a Handle to wait for it and stop it, and can re-attach to a
// task it started before the client restarted (Recover).
//
// It also holds each built-in driver's configuration schema, so that a
// task's `config` block can be checked without a client: ValidateTaskConfig
// returns a *structs.ValidationError naming every bad field. The server may
// call it at job registration; for that reason this package imports only
// structs and the standard library, and must never import the client, a
// driver implementation, or anything that starts processes.
//
// Usage (client side):
//
//	if err := d.ValidateConfig(task.Config); err != nil { ... }   // Failed Validation
//	h, err := d.Start(ctx, cfg)                                  // Driver Failure on error
//	res, err := h.Wait(ctx)                                      // exit code, signal
//	err = h.Stop("SIGINT", 5*time.Second)                        // kill signal, then SIGKILL
//	saved := h.State()                                           // persisted; Recover(saved) after a restart
package driver
