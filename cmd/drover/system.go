package main

import "context"

func systemCommands() []*command {
	return []*command{{name: "system gc", synopsis: "Garbage-collect terminal jobs, evaluations, allocations and nodes now", run: runSystemGC}}
}

func runSystemGC(e *env, args []string) int {
	var af apiFlags
	fs := newFlagSet(e, "system gc", "[options]",
		"Run the cluster's garbage collection now instead of waiting for its interval.")
	af.register(fs, e)
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	if err := af.client().GarbageCollect(context.Background()); err != nil {
		return errorf(e, "running garbage collection: %v", err)
	}
	return exitOK
}
