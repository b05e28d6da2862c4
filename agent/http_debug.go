package agent

import (
	"net/http"
	"net/http/pprof"
	"runtime"
	"sync"
)

// Profiling rates set while an agent with enable_debug runs, so that the
// mutex and block profiles have data. Both are modest: a sampled event
// costs one stack capture.
const (
	// DebugMutexProfileFraction reports on average one in this many mutex
	// contention events (runtime.SetMutexProfileFraction).
	DebugMutexProfileFraction = 10
	// DebugBlockProfileRate samples on average one blocking event per this
	// many nanoseconds spent blocked; events at least this long are always
	// recorded (runtime.SetBlockProfileRate). 100 µs.
	DebugBlockProfileRate = 100_000
)

// registerDebug adds Go's net/http/pprof handlers under /debug/pprof/ to
// mux: the index, cmdline, profile (CPU, ?seconds=N, default 30), symbol,
// trace (?seconds=N), and through the index every named profile (heap,
// goroutine, mutex, block, allocs, threadcreate). They are mounted only
// with enable_debug; without it /debug/pprof/ is an unknown path (404).
// A CPU profile or trace may outlast the API's 2-minute write timeout:
// pprof extends the response's write deadline by the requested seconds.
//
// Importing net/http/pprof also registers these handlers on
// http.DefaultServeMux, which Drover never serves.
func registerDebug(mux *http.ServeMux) {
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol) // go tool pprof posts addresses
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}

// profiling counts the agents in this process that want mutex and block
// profiling; the rates are process-wide.
var profiling struct {
	mu        sync.Mutex
	users     int // guarded by mu
	prevMutex int // mutex fraction before the first user; guarded by mu
}

// enableProfiling sets the debug profiling rates (the first caller in the
// process does) and returns a function that gives them up: when the last
// user does, the mutex fraction returns to its previous value and block
// profiling stops. Calls after the first do nothing.
func enableProfiling() (release func()) {
	profiling.mu.Lock()
	defer profiling.mu.Unlock()
	if profiling.users == 0 {
		profiling.prevMutex = runtime.SetMutexProfileFraction(DebugMutexProfileFraction)
		runtime.SetBlockProfileRate(DebugBlockProfileRate)
	}
	profiling.users++
	return sync.OnceFunc(func() {
		profiling.mu.Lock()
		defer profiling.mu.Unlock()
		profiling.users--
		if profiling.users == 0 {
			runtime.SetMutexProfileFraction(profiling.prevMutex)
			runtime.SetBlockProfileRate(0)
		}
	})
}
