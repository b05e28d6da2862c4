package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/drover-project/drover/api"
)

// table writes aligned columns separated by two spaces.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer) *table {
	return &table{tw: tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)}
}

func (t *table) row(cells ...string) {
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() { _ = t.tw.Flush() }

// apiFlags are the flags every command that talks to an agent takes.
type apiFlags struct {
	address string
}

func (f *apiFlags) register(fs *flag.FlagSet, e *env) {
	fs.StringVar(&f.address, "address", api.AddressFromEnv(e.getenv),
		"agent HTTP address (env DROVER_ADDR, then NOMAD_ADDR)")
}

func (f *apiFlags) client() *api.Client { return api.NewClient(f.address) }

// newFlagSet returns a flag set for the named command whose usage line
// and errors go to e.stderr.
func newFlagSet(e *env, name, args, help string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: drover %s %s\n\n%s\n\nOptions:\n\n", name, args, help)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args and reports the exit code to use when parsing
// ends the command (0 for -h, 1 for an error); ok is false then.
func parseFlags(fs *flag.FlagSet, args []string, maxArgs int) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0, false
		}
		return 1, false
	}
	if fs.NArg() > maxArgs {
		fmt.Fprintf(fs.Output(), "This command takes at most %d argument(s); got %q\n", maxArgs, fs.Args())
		fs.Usage()
		return 1, false
	}
	return 0, true
}

func errorf(e *env, format string, args ...any) int {
	fmt.Fprintf(e.stderr, "Error "+format+"\n", args...)
	return 1
}
