package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/drover-project/drover/api"
	"github.com/drover-project/drover/structs"
)

// tailWindow is how much of the end of a log -tail -n reads to find its
// last lines.
const tailWindow = 64 << 10

func runAllocLogs(e *env, args []string) int {
	var af apiFlags
	var stderr, follow, tail, verbose, byJob bool
	var lines int
	var bytesBack int64
	fs := newFlagSet(e, "alloc logs", "[options] <alloc> [task]",
		"Print a task's stdout (or -stderr). The logs are read from the agent on the allocation's node;\n"+
			"the task may be omitted when the group has one. With -job, the first argument is a job\n"+
			"and its most recent allocation is used.")
	af.register(fs, e)
	fs.BoolVar(&stderr, "stderr", false, "print stderr instead of stdout")
	fs.BoolVar(&follow, "f", false, "keep printing new output until the task ends")
	fs.BoolVar(&tail, "tail", false, "print the end of the log (the last -n lines, or -c bytes)")
	fs.IntVar(&lines, "n", 10, "with -tail: how many lines")
	fs.Int64Var(&bytesBack, "c", 0, "with -tail: how many bytes (instead of -n lines)")
	fs.BoolVar(&verbose, "verbose", false, "show full IDs")
	fs.BoolVar(&byJob, "job", false, "the first argument is a job ID: use its most recent allocation")
	if code, ok := parseFlags(fs, args, 2); !ok {
		return code
	}
	if fs.NArg() < 1 {
		fs.Usage()
		return exitError
	}
	c := af.client()
	ctx := context.Background()
	var (
		stub *structs.AllocListStub
		code int
		ok   bool
	)
	if byJob {
		stub, code, ok = latestJobAlloc(e, c, fs.Arg(0))
	} else {
		stub, code, ok = resolveAlloc(e, c, fs.Arg(0), verbose)
	}
	if !ok {
		return code
	}
	alloc, _, err := c.Allocation(ctx, stub.ID, nil)
	if err != nil {
		return errorf(e, "querying allocation: %v", err)
	}
	task, code, ok := pickTask(e, alloc, fs.Arg(1))
	if !ok {
		return code
	}
	logType := "stdout"
	if stderr {
		logType = "stderr"
	}
	clients := []*api.Client{c}
	if node, _, err := c.Node(ctx, alloc.NodeID, nil); err == nil && node.HTTPAddr != "" {
		clients = []*api.Client{af.clientAt(nodeAddress(node.HTTPAddr, node.TLSEnabled, af.address)), c}
	}
	open := func(follow bool, origin string, offset int64) (io.ReadCloser, error) {
		var err error
		for _, cl := range clients {
			var rc io.ReadCloser
			if rc, err = cl.TaskLogs(ctx, alloc.ID, task, logType, follow, origin, offset); err == nil {
				return rc, nil
			}
			var se *api.StatusError
			if errors.As(err, &se) && se.Code != 501 {
				return nil, err // the node's agent answered: no point asking another
			}
		}
		return nil, err
	}

	if tail && bytesBack == 0 {
		rc, err := open(false, "end", tailWindow)
		if err != nil {
			return errorf(e, "reading logs: %v", err)
		}
		buf, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return errorf(e, "reading logs: %v", err)
		}
		_, _ = e.stdout.Write(lastLines(buf, lines))
		if !follow {
			return exitOK
		}
		return copyLog(e, open, true, "end", 0)
	}
	origin, offset := "start", int64(0)
	if tail {
		origin, offset = "end", bytesBack
	}
	return copyLog(e, open, follow, origin, offset)
}

// latestJobAlloc returns the job's most recently created allocation.
func latestJobAlloc(e *env, c *api.Client, jobID string) (*structs.AllocListStub, int, bool) {
	job, code, ok := resolveJob(e, c, jobID)
	if !ok {
		return nil, code, false
	}
	allocs, _, err := c.JobAllocations(context.Background(), job.ID, false, nil)
	if err != nil {
		return nil, errorf(e, "querying allocations of job %q: %v", job.ID, err), false
	}
	var latest *structs.AllocListStub
	for _, a := range allocs {
		if latest == nil || a.CreateIndex > latest.CreateIndex {
			latest = a
		}
	}
	if latest == nil {
		return nil, errorf(e, "job %q has no allocations", job.ID), false
	}
	return latest, exitOK, true
}

func copyLog(e *env, open func(bool, string, int64) (io.ReadCloser, error), follow bool, origin string, offset int64) int {
	rc, err := open(follow, origin, offset)
	if err != nil {
		return errorf(e, "reading logs: %v", err)
	}
	defer rc.Close()
	if _, err := io.Copy(e.stdout, rc); err != nil {
		return errorf(e, "reading logs: %v", err)
	}
	return exitOK
}

// pickTask returns the named task, or the group's only task.
func pickTask(e *env, a *structs.Allocation, name string) (string, int, bool) {
	var tasks []string
	if a.Job != nil {
		if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil {
			for _, t := range tg.Tasks {
				tasks = append(tasks, t.Name)
			}
		}
	}
	switch {
	case name != "":
		return name, exitOK, true
	case len(tasks) == 1:
		return tasks[0], exitOK, true
	}
	return "", usagef(e, "the allocation's group has tasks %s; name one", strings.Join(tasks, ", ")), false
}

// lastLines returns the last n lines of buf (a final partial line counts).
func lastLines(buf []byte, n int) []byte {
	if n <= 0 {
		return nil
	}
	i := len(buf)
	if i > 0 && buf[i-1] == '\n' {
		i-- // the final newline ends the last line; it does not start one
	}
	for ; n > 0; n-- {
		j := bytes.LastIndexByte(buf[:i], '\n')
		if j < 0 {
			return buf
		}
		i = j
	}
	return buf[i+1:]
}

// nodeAddress turns a node's HTTP address into a URL; an unspecified host
// (0.0.0.0) is replaced by the host of the agent the CLI talks to.
func nodeAddress(httpAddr string, https bool, agentAddr string) string {
	scheme := "http://"
	if https {
		scheme = "https://"
	}
	host, port, err := net.SplitHostPort(httpAddr)
	if err != nil {
		return scheme + httpAddr
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
		if u := strings.TrimPrefix(strings.TrimPrefix(agentAddr, "http://"), "https://"); u != "" {
			if h, _, err := net.SplitHostPort(strings.TrimRight(u, "/")); err == nil {
				host = h
			}
		}
	}
	return scheme + net.JoinHostPort(host, port)
}
