// Package driver defines the task driver contract of the Drover client: a
// driver starts a task's process (or container, or nothing at all, for the
// mock), returns a Handle to wait for it and stop it, and can re-attach to a
// task it started before the client restarted (Recover).
//
// Each built-in driver's configuration schema lives in structs/driverspec,
// so that servers can validate task configs at job registration without
// importing the client.
//
// Usage (client side):
//
//	if err := d.ValidateConfig(task.Config); err != nil { ... }   // Failed Validation
//	h, err := d.Start(ctx, cfg)                                  // Driver Failure on error
//	res, err := h.Wait(ctx)                                      // exit code, signal
//	err = h.Stop("SIGINT", 5*time.Second)                        // kill signal, then SIGKILL
//	saved := h.State()                                           // persisted; Recover(saved) after a restart
package driver
