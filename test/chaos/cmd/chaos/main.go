// Command chaos runs scenarios of Drover's chaos suite (test/chaos):
//
//	go run ./test/chaos/cmd/chaos -bin bin/drover -scenario leader-pause -runs 5 -seed 1
//
// (make chaos SCENARIO=... RUNS=N SEED=...). Each run starts a fresh
// cluster of agent processes in network namespaces, injects the fault
// under a workload and checks the history; it prints one line per run and
// a summary per scenario, appends each run's result to
// RESULTS/results.jsonl, and keeps the history, logs and porcupine's
// visualisation of every failing run under RESULTS. Needs root. The exit
// status is 1 when any run failed.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/drover-project/drover/test/chaos"
)

func main() {
	bin := flag.String("bin", "bin/drover", "the drover binary")
	scenario := flag.String("scenario", "all", "scenario name, comma-separated names, or all: "+strings.Join(chaos.ScenarioNames(), ", "))
	runs := flag.Int("runs", 1, "runs per scenario")
	seed := flag.Int64("seed", 1, "seed of the first run (run i uses seed+i)")
	results := flag.String("results", "chaos-results", "results directory")
	hold := flag.Duration("hold", 8*time.Second, "how long each fault lasts (the client partition at least 20s)")
	pauseMax := flag.Duration("pause-max", 30*time.Second, "longest SIGSTOP pause (drawn from 5s to this)")
	writers := flag.Int("writers", 6, "concurrent writers")
	keep := flag.Bool("keep", false, "keep the files of passing runs too")
	clean := flag.Bool("clean", false, "remove what runs that are gone left behind (namespaces, links, mounts, processes) and exit")
	table := flag.String("table", "", "print a markdown table of the runs in this results.jsonl and exit")
	flag.Parse()

	if *clean {
		chaos.CleanLeftovers()
		return
	}
	if *table != "" {
		f, err := os.Open(*table)
		if err == nil {
			err = chaos.Table(f, os.Stdout)
			f.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			os.Exit(2)
		}
		return
	}

	if why := chaos.Available(); why != "" {
		fmt.Fprintln(os.Stderr, "chaos:", why)
		os.Exit(2)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		fmt.Fprintln(os.Stderr, "chaos: interrupted; removing this run's namespaces and processes")
		chaos.CleanOwn()
		os.Exit(130)
	}()
	abs, err := filepath.Abs(*bin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := os.MkdirAll(*results, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	names := chaos.ScenarioNames()
	if *scenario != "all" {
		names = strings.Split(*scenario, ",")
	}
	jsonl, err := os.OpenFile(filepath.Join(*results, "results.jsonl"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer jsonl.Close()
	failed := false
	for _, name := range names {
		var passed, total int
		for i := 0; i < *runs; i++ {
			cfg := chaos.DefaultConfig(abs, *results, name, *seed+int64(i))
			cfg.Hold, cfg.PauseMax, cfg.Writers, cfg.Keep = *hold, *pauseMax, *writers, *keep
			cfg.Log = func(format string, args ...any) { fmt.Printf("  "+format+"\n", args...) }
			res, err := chaos.Run(cfg)
			if err != nil {
				fmt.Printf("%s seed %d: could not run: %v\n", name, cfg.Seed, err)
				failed = true
				continue
			}
			b, _ := json.Marshal(res)
			jsonl.Write(append(b, '\n'))
			if res.Skipped != "" {
				fmt.Printf("%s: skipped: %s\n", name, res.Skipped)
				break
			}
			total++
			if res.Pass {
				passed++
			} else {
				failed = true
			}
			fmt.Println(chaos.Summary(res))
		}
		if total > 0 {
			fmt.Printf("== %s: %d/%d runs passed\n", name, passed, total)
		}
	}
	if failed {
		os.Exit(1)
	}
}
