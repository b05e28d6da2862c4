package agent

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// agentFlags holds the values of `drover agent` flags before they are
// applied; only flags given on the command line override the files.
type agentFlags struct {
	dev             bool
	server          bool
	client          bool
	servers         stringList
	nodeClass       string
	nodePool        string
	meta            stringList
	bootstrapExpect int
	dataDir         string
	bind            string
	httpPort        int
	rpcPort         int
	retryJoin       stringList
	node            string
	dc              string
	region          string
	configs         stringList
	logLevel        string
	logJSON         bool
	numSchedulers   int
}

// register defines the `drover agent` flags on fs, bound to f.
func (f *agentFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.dev, "dev", false, "run a single-node dev server on 127.0.0.1 with a throwaway data dir")
	fs.BoolVar(&f.server, "server", false, "enable server mode")
	fs.BoolVar(&f.client, "client", false, "enable client mode (runs allocations on this machine)")
	fs.Var(&f.servers, "servers", "servers a client joins, host[:port], comma-separated; repeatable")
	fs.StringVar(&f.nodeClass, "node-class", "", "the client's node class")
	fs.StringVar(&f.nodePool, "node-pool", "", `the client's node pool (default "default"; created when missing)`)
	fs.Var(&f.meta, "meta", "client node metadata key=value; repeatable")
	fs.IntVar(&f.bootstrapExpect, "bootstrap-expect", 0, "number of servers to wait for before bootstrapping Raft")
	fs.StringVar(&f.dataDir, "data-dir", "", "directory for Raft data (required for a server outside -dev)")
	fs.StringVar(&f.bind, "bind", "", "address to bind the HTTP and RPC listeners to (default 0.0.0.0)")
	fs.IntVar(&f.httpPort, "http-port", DefaultHTTPPort, "HTTP API port (0 picks a free port)")
	fs.IntVar(&f.rpcPort, "rpc-port", DefaultRPCPort, "RPC and Raft port (0 picks a free port)")
	fs.Var(&f.retryJoin, "retry-join", "server address to join, host[:port]; repeatable")
	fs.StringVar(&f.node, "node", "", "node name (default: host name)")
	fs.StringVar(&f.dc, "dc", "", "datacenter (default dc1)")
	fs.StringVar(&f.region, "region", "", "region (default global)")
	fs.Var(&f.configs, "config", "config file or directory (HCL or JSON); repeatable, later files win")
	fs.StringVar(&f.logLevel, "log-level", "", "log level: trace, debug, info, warn, error")
	fs.BoolVar(&f.logJSON, "log-json", false, "write logs as JSON")
	fs.IntVar(&f.numSchedulers, "num-schedulers", 0, "number of scheduler workers (0: server default)")
}

// LoadConfig builds the agent configuration from `drover agent` arguments:
// defaults (or -dev defaults), then each -config file in order, then the
// flags that were given. It validates the result. It returns flag.ErrHelp
// when -h was given (usage has been written to out).
func LoadConfig(args []string, out io.Writer) (*Config, error) {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(out)
	return LoadConfigFlags(fs, args)
}

// LoadConfigFlags is LoadConfig with the caller's flag set: the agent's
// flags are defined on fs (which must not define them already), so the
// caller chooses its output, error handling and usage text. fs should be
// flag.ContinueOnError: errors, and flag.ErrHelp for -h, are returned.
func LoadConfigFlags(fs *flag.FlagSet, args []string) (*Config, error) {
	var f agentFlags
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	c := DefaultConfig()
	if f.dev {
		c = DevConfig()
	}
	for _, path := range f.configs {
		if err := LoadConfigFile(c, path); err != nil {
			return nil, err
		}
	}
	var flagErr error
	fs.Visit(func(fl *flag.Flag) {
		if fl.Name == "meta" {
			if c.Client.Meta == nil {
				c.Client.Meta = map[string]string{}
			}
			for _, kv := range f.meta {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					flagErr = fmt.Errorf("-meta %q: want key=value", kv)
					return
				}
				c.Client.Meta[k] = v
			}
		}
		switch fl.Name {
		case "server":
			c.Server.Enabled = f.server
		case "client":
			c.Client.Enabled = f.client
		case "servers":
			var list []string
			for _, v := range f.servers {
				for _, s := range strings.Split(v, ",") {
					if s = strings.TrimSpace(s); s != "" {
						list = append(list, s)
					}
				}
			}
			c.Client.Servers = list
		case "node-class":
			c.Client.NodeClass = f.nodeClass
		case "node-pool":
			c.Client.NodePool = f.nodePool
		case "bootstrap-expect":
			c.Server.BootstrapExpect = f.bootstrapExpect
		case "data-dir":
			c.DataDir = f.dataDir
		case "bind":
			c.BindAddr = f.bind
		case "http-port":
			c.Ports.HTTP = f.httpPort
		case "rpc-port":
			c.Ports.RPC = f.rpcPort
		case "retry-join":
			c.Server.RetryJoin = f.retryJoin
		case "node":
			c.NodeName = f.node
		case "dc":
			c.Datacenter = f.dc
		case "region":
			c.Region = f.region
		case "log-level":
			c.LogLevel = f.logLevel
		case "log-json":
			c.LogJSON = f.logJSON
		case "num-schedulers":
			c.Server.NumSchedulers = f.numSchedulers
		}
	})
	if flagErr != nil {
		return nil, flagErr
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("resolving relative paths: %w", err)
	}
	if err := c.ResolvePaths(wd); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}
