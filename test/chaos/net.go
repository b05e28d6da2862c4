package chaos

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// prefixBase starts every namespace, link and state file of the suite.
const prefixBase = "drch"

// stateDir holds one file per live run (its prefix, holding its PID), so
// that a later run removes only the leftovers of runs that are gone.
var stateDir = filepath.Join(os.TempDir(), "drover-chaos")

// Net is one run's network: a bridge in the root namespace (the driver's
// side, address .1) and one namespace per node joined to it by a veth.
type Net struct {
	Prefix string // drchXXX
	Subnet string // 10.A.B (a /24)
	Bridge string
	nodes  []string // node names (s1, c1, ...), in the order added

	netemOK bool
}

// run runs a command and returns an error holding its output.
func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Available says why the suite cannot run here, or "" when it can.
func Available() string {
	if os.Geteuid() != 0 {
		return "the chaos suite needs root (network namespaces, nftables, tmpfs mounts)"
	}
	for _, tool := range []string{"ip", "nft", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "the chaos suite needs " + tool + " on PATH"
		}
	}
	name := fmt.Sprintf("%sprobe%d", prefixBase, os.Getpid()%100000)
	if err := run("ip", "netns", "add", name); err != nil {
		return "ip netns is unavailable: " + err.Error()
	}
	run("ip", "netns", "del", name)
	return ""
}

// NewNet creates the bridge of a new run, first removing what runs that
// are gone left behind.
func NewNet() (*Net, error) {
	CleanLeftovers()
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return nil, err
	}
	// A prefix and a subnet no other run (or anything else) uses.
	var n *Net
	for {
		var b [3]byte
		rand.Read(b[:])
		n = &Net{Prefix: prefixBase + hex.EncodeToString(b[:2])[:3]}
		n.Subnet = fmt.Sprintf("10.%d.%d", 100+int(b[1])%100, 1+int(b[2])%250)
		n.Bridge = n.Prefix + "br"
		_, taken := os.Stat(filepath.Join(stateDir, n.Prefix))
		routes, _ := exec.Command("ip", "route", "show", n.Subnet+".0/24").Output()
		if taken != nil && len(strings.TrimSpace(string(routes))) == 0 {
			break
		}
	}
	if err := os.WriteFile(filepath.Join(stateDir, n.Prefix), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, err
	}
	if err := run("ip", "link", "add", n.Bridge, "type", "bridge"); err != nil {
		n.Close()
		return nil, err
	}
	if err := firstErr(
		run("ip", "addr", "add", n.Subnet+".1/24", "dev", n.Bridge),
		run("ip", "link", "set", n.Bridge, "up"),
	); err != nil {
		n.Close()
		return nil, err
	}
	// Docker's br_netfilter sends bridged frames through iptables' FORWARD
	// chain, whose policy here is DROP: accept the run's own bridge.
	if _, err := exec.LookPath("iptables"); err == nil {
		if err := run("iptables", forwardRule("-I", n.Bridge, n.Prefix)...); err != nil {
			n.Close()
			return nil, err
		}
	}
	n.netemOK = run("tc", "qdisc", "add", "dev", n.Bridge, "root", "netem", "delay", "1ms") == nil
	if n.netemOK {
		run("tc", "qdisc", "del", "dev", n.Bridge, "root")
	}
	return n, nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// NS is the namespace of node name.
func (n *Net) NS(name string) string { return n.Prefix + "-" + name }

// Addr is node name's address: servers s1-s9 at .11-.19, clients c1-c9
// at .21-.29.
func (n *Net) Addr(name string) string {
	i, _ := strconv.Atoi(name[1:])
	if name[0] == 's' {
		return fmt.Sprintf("%s.%d", n.Subnet, 10+i)
	}
	return fmt.Sprintf("%s.%d", n.Subnet, 20+i)
}

// Driver is the root namespace's address on the bridge (the workload's).
func (n *Net) Driver() string { return n.Subnet + ".1" }

// AddNode makes node name's namespace with its veth and address.
func (n *Net) AddNode(name string) error {
	ns, link := n.NS(name), n.Prefix+name
	if err := run("ip", "netns", "add", ns); err != nil {
		return err
	}
	n.nodes = append(n.nodes, name)
	return firstErr(
		run("ip", "link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", ns),
		run("ip", "link", "set", link, "master", n.Bridge, "up"),
		run("ip", "-n", ns, "addr", "add", n.Addr(name)+"/24", "dev", "eth0"),
		run("ip", "-n", ns, "link", "set", "eth0", "up"),
		run("ip", "-n", ns, "link", "set", "lo", "up"),
	)
}

// Partition cuts node name off from every other node; the driver (the
// workload and the checkers) still reaches it, as an operator's network
// would while the cluster's own links fail.
func (n *Net) Partition(name string) error {
	ns := n.NS(name)
	rules := fmt.Sprintf(`table inet drchaos {
  chain in { type filter hook input priority 0; policy accept; ip saddr %[1]s.0/24 ip saddr != %[2]s drop; }
  chain out { type filter hook output priority 0; policy accept; ip daddr %[1]s.0/24 ip daddr != %[2]s drop; }
}
`, n.Subnet, n.Driver())
	cmd := exec.Command("ip", "netns", "exec", ns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("partitioning %s: %v: %s", name, err, out)
	}
	return nil
}

// Heal ends a Partition or Degrade of node name.
func (n *Net) Heal(name string) error {
	ns := n.NS(name)
	exec.Command("ip", "netns", "exec", ns, "nft", "delete", "table", "inet", "drchaos").Run()
	exec.Command("ip", "netns", "exec", ns, "nft", "delete", "table", "inet", "drchaosloss").Run()
	exec.Command("tc", "-n", ns, "qdisc", "del", "dev", "eth0", "root").Run()
	return nil
}

// Degrade adds delay and loss (percent) to node name's link: tc netem
// where the kernel has it; otherwise the loss alone with nftables, and
// the answer says the delay was not applied.
func (n *Net) Degrade(name string, delay time.Duration, loss int) (string, error) {
	ns := n.NS(name)
	if n.netemOK {
		return "netem", run("tc", "-n", ns, "qdisc", "add", "dev", "eth0", "root", "netem",
			"delay", delay.String(), "loss", strconv.Itoa(loss)+"%")
	}
	rules := fmt.Sprintf(`table inet drchaosloss {
  chain out { type filter hook output priority 0; policy accept; ip daddr %s.0/24 numgen random mod 100 < %d drop; }
}
`, n.Subnet, loss)
	cmd := exec.Command("ip", "netns", "exec", ns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("degrading %s: %v: %s", name, err, out)
	}
	return "nftables loss only (this kernel has no netem: no delay)", nil
}

// Close kills every process left in the run's namespaces (agents, their
// tasks and task supervisors) and removes the namespaces, links and
// bridge, and the run's state file.
func (n *Net) Close() {
	cleanPrefix(n.Prefix)
}

// cleanPrefix removes everything named with prefix.
func cleanPrefix(prefix string) {
	out, _ := exec.Command("ip", "netns", "list").Output()
	var nss []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && strings.HasPrefix(f[0], prefix+"-") {
			nss = append(nss, f[0])
		}
	}
	for round := 0; round < 5; round++ {
		pids := runPids(prefix, nss)
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGCONT)
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if len(pids) == 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, ns := range nss {
		run("ip", "netns", "del", ns)
	}
	links, _ := exec.Command("ip", "-o", "link", "show").Output()
	for _, line := range strings.Split(string(links), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name := strings.SplitN(strings.TrimSuffix(f[1], ":"), "@", 2)[0]
		if strings.HasPrefix(name, prefix) && !strings.HasSuffix(name, "br") {
			run("ip", "link", "del", name)
		}
	}
	run("ip", "link", "del", prefix+"br")
	for run("iptables", forwardRule("-D", prefix+"br", prefix)...) == nil {
	}
	unmountUnder(prefix)
	os.Remove(filepath.Join(stateDir, prefix))
}

// runPids finds the processes of the run with prefix: those in its
// namespaces (nss), and, wherever they are (a namespace already deleted
// lives on while a process is in it), those working in its directories
// (agents' data dirs, task supervisors and tasks in their allocation
// dirs) or carrying one of its sentinel markers.
func runPids(prefix string, nss []string) []int {
	inodes := map[uint64]bool{}
	for _, ns := range nss {
		var st syscall.Stat_t
		if syscall.Stat("/run/netns/"+ns, &st) == nil {
			inodes[st.Ino] = true
		}
	}
	self := os.Getpid()
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid <= 1 || pid == self {
			continue
		}
		var st syscall.Stat_t
		mine := syscall.Stat(d+"/ns/net", &st) == nil && inodes[st.Ino]
		if !mine {
			cwd, _ := os.Readlink(d + "/cwd")
			mine = strings.Contains(cwd, "/"+prefix+"-")
		}
		if !mine {
			cmdline, _ := os.ReadFile(d + "/cmdline")
			mine = strings.Contains(string(cmdline), "chaos-"+prefix+"-")
		}
		if mine {
			pids = append(pids, pid)
		}
	}
	return pids
}

// forwardRule is the iptables arguments that insert (-I) or delete (-D)
// the rule accepting bridge's frames.
func forwardRule(op, bridge, prefix string) []string {
	return []string{op, "FORWARD", "-i", bridge, "-o", bridge, "-m", "comment", "--comment", prefix, "-j", "ACCEPT"}
}

// unmountUnder unmounts the run's tmpfs data directories (their paths
// hold the prefix).
func unmountUnder(prefix string) {
	b, _ := os.ReadFile("/proc/self/mounts")
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && strings.Contains(f[1], "/"+prefix+"-") {
			run("umount", "-l", f[1])
		}
	}
}

// CleanLeftovers removes what runs whose process is gone left behind:
// each live run holds a state file with its PID.
func CleanLeftovers() {
	entries, _ := os.ReadDir(stateDir)
	live := map[string]bool{}
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(stateDir, e.Name()))
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if pid > 0 && syscall.Kill(pid, 0) == nil {
			live[e.Name()] = true
		}
	}
	prefixes := map[string]bool{}
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && strings.HasPrefix(f[0], prefixBase) && strings.Contains(f[0], "-") {
			prefixes[strings.SplitN(f[0], "-", 2)[0]] = true
		}
	}
	links, _ := exec.Command("ip", "-o", "link", "show", "type", "bridge").Output()
	for _, line := range strings.Split(string(links), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 {
			name := strings.TrimSuffix(f[1], ":")
			if strings.HasPrefix(name, prefixBase) && strings.HasSuffix(name, "br") && len(name) == len(prefixBase)+5 {
				prefixes[strings.TrimSuffix(name, "br")] = true
			}
		}
	}
	for _, e := range entries {
		prefixes[e.Name()] = true
	}
	// Tasks a run left behind carry its sentinel marker (chaos-drchXXX-).
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, path := range cmdlines {
		b, _ := os.ReadFile(path)
		if i := strings.Index(string(b), "chaos-"+prefixBase); i >= 0 && len(b) >= i+len("chaos-")+len(prefixBase)+3 {
			prefixes[string(b[i+len("chaos-"):i+len("chaos-")+len(prefixBase)+3])] = true
		}
	}
	rules, _ := exec.Command("iptables", "-S", "FORWARD").Output()
	for _, f := range strings.Fields(string(rules)) {
		f = strings.Trim(f, `"`)
		if strings.HasPrefix(f, prefixBase) && len(f) == len(prefixBase)+3 {
			prefixes[f] = true
		}
	}
	for p := range prefixes {
		if !live[p] && len(p) == len(prefixBase)+3 {
			cleanPrefix(p)
		}
	}
}

// CleanOwn removes everything of this process's runs (for a signal
// handler: the runs' own deferred cleanups do not run on exit).
func CleanOwn() {
	entries, _ := os.ReadDir(stateDir)
	me := strconv.Itoa(os.Getpid())
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(stateDir, e.Name()))
		if strings.TrimSpace(string(b)) == me {
			cleanPrefix(e.Name())
		}
	}
}
