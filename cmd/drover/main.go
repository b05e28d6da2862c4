package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/drover-project/drover/agent"
	"github.com/drover-project/drover/internal/textdist"
)

// env is everything a command touches outside its arguments, so tests can
// run commands in-process.
type env struct {
	stdout, stderr io.Writer
	stdin          io.Reader
	getenv         func(string) string
	// now and loc render times ("5m ago", dates); tests fix both.
	now func() time.Time
	loc *time.Location
	// monitorWait is how long one blocking query of a monitor waits
	// before it reports that it is still waiting.
	monitorWait time.Duration
	// signals returns a channel of shutdown signals and a function that
	// stops delivery.
	signals func() (<-chan os.Signal, func())
	// hangups returns a channel of reload signals (SIGHUP) and a function
	// that stops delivery.
	hangups func() (<-chan os.Signal, func())
	// agentStarted, if set, is called once `drover agent` is running.
	agentStarted func(*agent.Agent)
}

func osEnv() *env {
	return &env{
		stdout:      os.Stdout,
		stderr:      os.Stderr,
		stdin:       os.Stdin,
		getenv:      os.Getenv,
		now:         time.Now,
		loc:         time.Local,
		monitorWait: defaultMonitorWait,
		signals: func() (<-chan os.Signal, func()) {
			ch := make(chan os.Signal, 2)
			signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
			return ch, func() { signal.Stop(ch) }
		},
		hangups: func() (<-chan os.Signal, func()) {
			ch := make(chan os.Signal, 1)
			signal.Notify(ch, syscall.SIGHUP)
			return ch, func() { signal.Stop(ch) }
		},
	}
}

// command is one leaf of the command tree.
type command struct {
	name     string // full path, e.g. "operator raft list-peers"
	synopsis string
	run      func(e *env, args []string) int
}

// commands returns the command table; each file adds its group.
func commands() []*command {
	var all []*command
	all = append(all, agentCommands()...)
	all = append(all, aclCommands()...)
	all = append(all, statusCommands()...)
	all = append(all, operatorCommands()...)
	all = append(all, snapshotCommands()...)
	all = append(all, versionCommands()...)
	all = append(all, jobCommands()...)
	all = append(all, nodeCommands()...)
	all = append(all, nodePoolCommands()...)
	all = append(all, nodePoolAutoscaleCommands()...)
	all = append(all, allocCommands()...)
	all = append(all, evalCommands()...)
	all = append(all, deploymentCommands()...)
	all = append(all, serviceCommands()...)
	all = append(all, serverCommands()...)
	all = append(all, systemCommands()...)
	all = append(all, simCommands()...)
	all = append(all, benchCommands()...)
	all = append(all, tlsCommands()...)
	all = append(all, varCommands()...)
	sort.Slice(all, func(i, j int) bool { return all[i].name < all[j].name })
	return all
}

// defaultGCPercent is the GC target the binary runs with unless GOGC is
// set: a server's heap is mostly long-lived state, and collecting at 2x the
// live heap instead of 1x cut about a tenth of the CPU of Job.Register at
// 64 clients (docs/benchmarks.md). GOMEMLIMIT still caps the heap.
const defaultGCPercent = 200

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	os.Exit(run(os.Args[1:], osEnv()))
}

// run dispatches args to a command and returns the exit code: 0 on
// success, 1 on any error; some commands use more (job run: 2 when
// allocations could not be placed; job plan: 1 when it would change
// allocations, 255 on error).
func run(args []string, e *env) int {
	table := commands()
	if len(args) == 0 {
		usage(e.stderr, table, "")
		return 1
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(e.stdout, table, "")
		return 0
	case "-v", "-version", "--version":
		args = []string{"version"}
	}
	// The longest command name that prefixes args wins.
	for n := len(args); n > 0; n-- {
		name := strings.Join(args[:n], " ")
		for _, c := range table {
			if c.name == name {
				return c.run(e, args[n:])
			}
		}
	}
	// A group name ("operator", "operator raft") lists its commands.
	for n := len(args); n > 0; n-- {
		group := strings.Join(args[:n], " ")
		if hasGroup(table, group) {
			if n < len(args) && isHelpFlag(args[n]) {
				usage(e.stdout, table, group)
				return 0
			}
			if n < len(args) {
				fmt.Fprintf(e.stderr, "Unknown command: drover %s\n\n", strings.Join(args, " "))
				didYouMean(e.stderr, group, args[n], table)
			}
			usage(e.stderr, table, group)
			return 1
		}
	}
	fmt.Fprintf(e.stderr, "Unknown command: %s\n\n", args[0])
	didYouMean(e.stderr, "", args[0], table)
	usage(e.stderr, table, "")
	return 1
}

// didYouMean prints the command closest to a mistyped word, if one is
// close: typed is the word after group ("" for the top level).
func didYouMean(w io.Writer, group, typed string, table []*command) {
	if best := closest(typed, nextWords(table, group)); best != "" {
		name := best
		if group != "" {
			name = group + " " + best
		}
		fmt.Fprintf(w, "Did you mean %q?\n\n", "drover "+name)
	}
}

// nextWords lists, once each, the words that can follow group ("" for
// the first word of every command).
func nextWords(table []*command, group string) []string {
	var words []string
	seen := map[string]bool{}
	for _, c := range table {
		rest := c.name
		if group != "" {
			var ok bool
			if rest, ok = strings.CutPrefix(c.name, group+" "); !ok {
				continue
			}
		}
		word, _, _ := strings.Cut(rest, " ")
		if !seen[word] {
			seen[word] = true
			words = append(words, word)
		}
	}
	return words
}

// closest returns the candidate nearest to typed: the only one typed is a
// prefix of (at least 2 letters typed), else the one at the smallest edit
// distance (a swap of two neighbours counts as one edit) if that is at
// most 2 and less than half of typed's length, rounded up. Ties go to the
// first candidate; "" when none is close.
func closest(typed string, candidates []string) string {
	var prefixed []string
	for _, c := range candidates {
		if len(typed) >= 2 && strings.HasPrefix(c, typed) {
			prefixed = append(prefixed, c)
		}
	}
	if len(prefixed) == 1 {
		return prefixed[0]
	}
	best, bestD := "", min(2, (len(typed)+1)/2)+1
	for _, c := range candidates {
		if d := textdist.Distance(typed, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func isHelpFlag(s string) bool {
	return s == "-h" || s == "-help" || s == "--help" || s == "help"
}

func hasGroup(table []*command, group string) bool {
	for _, c := range table {
		if strings.HasPrefix(c.name, group+" ") {
			return true
		}
	}
	return false
}

// usage lists the commands under group ("" for all).
func usage(w io.Writer, table []*command, group string) {
	if group == "" {
		fmt.Fprintln(w, "Usage: drover [-version] [-help] <command> [args]")
	} else {
		fmt.Fprintf(w, "Usage: drover %s <subcommand> [args]\n", group)
	}
	fmt.Fprintln(w, "\nCommands:")
	tw := newTable(w)
	for _, c := range table {
		if group == "" || strings.HasPrefix(c.name, group+" ") {
			tw.row("    "+c.name, c.synopsis)
		}
	}
	tw.flush()
}
