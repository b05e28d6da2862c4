package server_test

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	metrics "github.com/hashicorp/go-metrics"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/pool"
	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// benchEnvInt reads a positive integer from the environment, or def.
func benchEnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// benchCluster starts a 3-server loopback cluster for the scheduling
// benchmarks: real Raft timeouts, Raft log on disk (BENCH_NOSYNC=1 skips
// fsync), BENCH_WORKERS workers per server (default 4), node TTLs long
// enough that nothing goes down.
func benchCluster(b *testing.B) *testcluster.Cluster {
	workers := benchEnvInt("BENCH_WORKERS", 4)
	c := testcluster.NewTestCluster(b, 3, testcluster.WithConfig(func(cfg *server.Config) {
		cfg.RaftTimeoutScale = 1
		cfg.RaftNoSync = os.Getenv("BENCH_NOSYNC") != ""
		cfg.NumSchedulers = workers
		cfg.HeartbeatMinTTL = time.Hour
	}))
	c.WaitForLeader(b, 10*time.Second)
	return c
}

// forEach runs fn(i) for i in [0, n) on the given number of goroutines and
// returns the first error.
func forEach(n, goroutines int, fn func(i int) error) error {
	var next atomic.Int64
	var first atomic.Value
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || first.Load() != nil {
					return
				}
				if err := fn(i); err != nil {
					first.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := first.Load().(error); err != nil {
		return err
	}
	return nil
}

// registerBenchNodes registers n nodes through the servers over RPC.
func registerBenchNodes(b *testing.B, p *pool.Pool, addrs []string, n int) {
	err := forEach(n, 64, func(i int) error {
		var resp structs.NodeUpdateResponse
		return p.RPC(addrs[i%len(addrs)], "Node.Register", &structs.NodeRegisterRequest{Node: mock.Node()}, &resp)
	})
	if err != nil {
		b.Fatal(err)
	}
}

func serverAddrs(c *testcluster.Cluster) []string {
	var out []string
	for _, s := range c.Servers() {
		out = append(out, s.RPCAddr())
	}
	return out
}

// placedAllocs sums the allocations committed for jobs (from their
// summaries, which the FSM keeps current with every plan).
func placedAllocs(st *state.StateStore, jobs []*structs.Job) int {
	total := 0
	for _, j := range jobs {
		total += jobPlaced(st, j)
	}
	return total
}

// jobPlaced is the number of allocations committed for job.
func jobPlaced(st *state.StateStore, job *structs.Job) int {
	sum, err := st.JobSummary(nil, job.Namespace, job.ID)
	if err != nil {
		return 0
	}
	n := 0
	for _, tg := range sum.Summary {
		n += tg.Starting + tg.Running + tg.Complete + tg.Failed + tg.Lost
	}
	return n
}

// waitPlaced polls (every 10 ms, looking only at jobs not yet placed in
// full) until every job has count allocations, or the deadline passes.
func waitPlaced(st *state.StateStore, jobs []*structs.Job, count int, deadline time.Time) bool {
	remaining := append([]*structs.Job(nil), jobs...)
	for len(remaining) > 0 {
		kept := remaining[:0]
		for _, j := range remaining {
			if jobPlaced(st, j) < count {
				kept = append(kept, j)
			}
		}
		remaining = kept
		if len(remaining) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// cpuTime is the CPU time (user and system) this process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchMetrics installs an in-memory go-metrics sink when BENCH_METRICS
// is set, and returns a function that logs every drover timing (count,
// mean, max) and counter recorded since.
func benchMetrics(b *testing.B) func() {
	if os.Getenv("BENCH_METRICS") == "" {
		return func() {}
	}
	sink := metrics.NewInmemSink(time.Hour, time.Hour)
	cfg := metrics.DefaultConfig("")
	cfg.EnableHostname, cfg.EnableRuntimeMetrics = false, false
	if _, err := metrics.NewGlobal(cfg, sink); err != nil {
		b.Fatal(err)
	}
	return func() {
		for _, iv := range sink.Data() {
			var lines []string
			for key, v := range iv.Samples {
				if strings.HasPrefix(key, "drover.") {
					lines = append(lines, fmt.Sprintf("%-45s n=%-7d mean=%8.2fms max=%8.1fms", key, v.Count, v.Sum/float64(max(v.Count, 1)), v.Max))
				}
			}
			for key, v := range iv.Counters {
				if strings.HasPrefix(key, "drover.") {
					lines = append(lines, fmt.Sprintf("%-45s sum=%.0f", key, v.Sum))
				}
			}
			sort.Strings(lines)
			for _, l := range lines {
				b.Log(l)
			}
		}
	}
}

// BenchmarkScheduleThroughput: a 3-server loopback cluster with
// BENCH_NODES registered nodes (default 5,000); BENCH_JOBS jobs (default
// 1,000) of count BENCH_COUNT (default 100) are submitted at once through
// all servers (64 clients), and the clock stops when every allocation is
// committed in the leader's state. Reports placements/s, the wall time
// (s-total, s-submit) and the CPU time the whole process used meanwhile
// (cpu-s: all three servers; less sensitive to other load on the machine).
// BENCH_METRICS=1 (with -v) also logs the pipeline's timings.
//
//	go test -run '^$' -bench BenchmarkScheduleThroughput -benchtime 1x -timeout 30m ./server
func BenchmarkScheduleThroughput(b *testing.B) {
	numNodes := benchEnvInt("BENCH_NODES", 5000)
	numJobs := benchEnvInt("BENCH_JOBS", 1000)
	count := benchEnvInt("BENCH_COUNT", 100)
	report := benchMetrics(b)
	defer report()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c := benchCluster(b)
		p := pool.New(pool.Config{})
		addrs := serverAddrs(c)
		registerBenchNodes(b, p, addrs, numNodes)
		jobs := make([]*structs.Job, numJobs)
		for k := range jobs {
			jobs[k] = smallJob(fmt.Sprintf("bench-%05d", k), count)
		}
		leader := c.WaitForLeader(b, 10*time.Second)
		want := numJobs * count

		b.StartTimer()
		start, cpuStart := time.Now(), cpuTime()
		err := forEach(numJobs, 64, func(k int) error {
			var resp structs.JobRegisterResponse
			return p.RPC(addrs[k%len(addrs)], "Job.Register", &structs.JobRegisterRequest{Job: jobs[k]}, &resp)
		})
		if err != nil {
			b.Fatal(err)
		}
		submitted := time.Since(start)
		if !waitPlaced(leader.State(), jobs, count, start.Add(5*time.Minute)) {
			b.Fatalf("only %d of %d allocations placed after 5 minutes", placedAllocs(leader.State(), jobs), want)
		}
		elapsed, cpu := time.Since(start), cpuTime()-cpuStart
		b.StopTimer()

		b.ReportMetric(float64(want)/elapsed.Seconds(), "placements/s")
		b.ReportMetric(cpu.Seconds(), "cpu-s")
		b.ReportMetric(elapsed.Seconds(), "s-total")
		b.ReportMetric(submitted.Seconds(), "s-submit")
		checkPlacements(b, leader.State())
		p.Shutdown()
		c.Shutdown()
	}
}

// BenchmarkRegisterToComplete: on an idle 3-server cluster with 100 nodes,
// one job (count 10) at a time is registered through a follower and the
// clock runs until its evaluation is complete (watched with a blocking
// Eval.GetEval). Reports p50 and p99 latency.
//
//	go test -run '^$' -bench BenchmarkRegisterToComplete -benchtime 200x ./server
func BenchmarkRegisterToComplete(b *testing.B) {
	c := benchCluster(b)
	p := pool.New(pool.Config{})
	defer p.Shutdown()
	registerBenchNodes(b, p, serverAddrs(c), 100)
	leader := c.WaitForLeader(b, 10*time.Second)
	var target string
	for _, s := range c.Servers() {
		if s != leader {
			target = s.RPCAddr()
		}
	}

	latencies := make([]time.Duration, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		var reg structs.JobRegisterResponse
		job := smallJob(fmt.Sprintf("latency-%05d", i), 10)
		if err := p.RPC(target, "Job.Register", &structs.JobRegisterRequest{Job: job}, &reg); err != nil {
			b.Fatal(err)
		}
		index := reg.EvalCreateIndex
		for {
			args := &structs.EvalSpecificRequest{EvalID: reg.EvalID}
			args.MinQueryIndex = index
			args.MaxQueryTime = 10 * time.Second
			var resp structs.SingleEvalResponse
			if err := p.RPC(target, "Eval.GetEval", args, &resp); err != nil {
				b.Fatal(err)
			}
			if resp.Eval != nil && resp.Eval.TerminalStatus() {
				if resp.Eval.Status != structs.EvalStatusComplete {
					b.Fatalf("eval %s ended %s", resp.Eval.ID, resp.Eval.Status)
				}
				break
			}
			index = resp.Index
		}
		latencies[i] = time.Since(start)
	}
	b.StopTimer()
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	b.ReportMetric(ms(latencies[len(latencies)/2]), "p50-ms")
	b.ReportMetric(ms(latencies[(len(latencies)*99)/100]), "p99-ms")
}
