package main

import (
	"fmt"

	"github.com/drover-project/drover/version"
)

func versionCommands() []*command {
	return []*command{{name: "version", synopsis: "Print the Drover version", run: runVersion}}
}

func runVersion(e *env, args []string) int {
	fs := newFlagSet(e, "version", "", "Print the Drover version.")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	fmt.Fprintln(e.stdout, version.String())
	return 0
}
