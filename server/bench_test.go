package server_test

import (
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/pool"
	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// BenchmarkJobRegister registers jobs through a 3-server loopback cluster
// in this process (Raft log on disk with fsync; BENCH_NOSYNC=1 skips the
// fsync) with 1, 16 and 64 concurrent clients sharing one RPC pool, sending
// to the leader or to a follower (which forwards). It reports
// registrations per second and p50/p99 latency.
//
//	go test -run '^$' -bench BenchmarkJobRegister -benchtime 5000x ./server
func BenchmarkJobRegister(b *testing.B) {
	for _, target := range []string{"leader", "follower"} {
		for _, clients := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("%s/clients=%d", target, clients), func(b *testing.B) {
				benchRegister(b, target, clients)
			})
		}
	}
}

// benchRegister runs one configuration against a fresh cluster, so every
// configuration starts from the same (empty) state and Raft log.
func benchRegister(b *testing.B, target string, clients int) {
	c := testcluster.NewTestCluster(b, 3, testcluster.WithConfig(func(cfg *server.Config) {
		cfg.RaftTimeoutScale = 1
		cfg.RaftNoSync = os.Getenv("BENCH_NOSYNC") != ""
		// The replicated state core alone by default: no workers, so a
		// registration costs its Raft entry and nothing more. With
		// BENCH_WORKERS=1 every registration is also scheduled (an eval
		// dequeued, a blocked eval and an eval update written).
		if os.Getenv("BENCH_WORKERS") == "" {
			cfg.NumSchedulers = -1
		}
	}))
	srv := c.WaitForLeader(b, 10*time.Second)
	if target == "follower" {
		for _, s := range c.Servers() {
			if s != srv {
				srv = s
				break
			}
		}
	}
	p := pool.New(pool.Config{})
	defer p.Shutdown()
	addr := srv.RPCAddr()
	job := mock.Job()
	var seq atomic.Int64

	// Warm the session so dialing is not measured.
	if err := register(p, addr, job, seq.Add(1)); err != nil {
		b.Fatal(err)
	}

	latencies := make([]time.Duration, b.N)
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				t0 := time.Now()
				if err := register(p, addr, job, seq.Add(1)); err != nil {
					failed.Store(err)
					return
				}
				latencies[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "regs/s")
	b.ReportMetric(ms(latencies[len(latencies)/2]), "p50-ms")
	b.ReportMetric(ms(latencies[len(latencies)*99/100]), "p99-ms")
}

func register(p *pool.Pool, addr string, tmpl *structs.Job, n int64) error {
	job := tmpl.Copy()
	job.ID = fmt.Sprintf("bench-%d", n)
	job.Name = job.ID
	var resp structs.JobRegisterResponse
	return p.RPC(addr, "Job.Register", &structs.JobRegisterRequest{Job: job}, &resp)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
