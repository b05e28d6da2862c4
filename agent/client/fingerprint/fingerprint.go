package fingerprint

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/structs"
	"github.com/drover-project/drover/version"
)

// Defaults for values that cannot be read.
const (
	DefaultCPUMHz   = 1000
	DefaultMemoryMB = 1024
)

// Config says where to look.
type Config struct {
	// ProcRoot is /proc; EtcRoot is /etc (for os-release).
	ProcRoot string
	EtcRoot  string
	// DataDir is measured for disk space.
	DataDir string
	// NetworkAddr, if set, is reported as the node's IP address.
	NetworkAddr string
	// ReachAddrs are server addresses: the local address used to reach
	// the first of them is the node's IP address when NetworkAddr is unset.
	ReachAddrs []string
	// NumCPU returns the CPUs this process may use (runtime.NumCPU).
	NumCPU func() int
	Logger hclog.Logger
	// Network is the client's network settings.
	Network NetworkConfig
	// interfaces and routeIface replace the machine's (tests).
	interfaces func() []iface
}

// Result is the fingerprint.
type Result struct {
	Attributes map[string]string
	Resources  structs.NodeResources
}

// Fingerprint reads everything. It never fails.
func Fingerprint(cfg Config) *Result {
	if cfg.ProcRoot == "" {
		cfg.ProcRoot = "/proc"
	}
	if cfg.EtcRoot == "" {
		cfg.EtcRoot = "/etc"
	}
	if cfg.NumCPU == nil {
		cfg.NumCPU = runtime.NumCPU
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	log := cfg.Logger.Named("fingerprint")
	r := &Result{Attributes: map[string]string{}}
	attrs := r.Attributes

	// CPU.
	cpu := readCPU(cfg.ProcRoot, cfg.NumCPU())
	if cpu.mhz <= 0 {
		log.Debug("CPU frequency unknown; using a default", "mhz", DefaultCPUMHz)
		cpu.mhz = DefaultCPUMHz
	}
	attrs["cpu.arch"] = runtime.GOARCH
	attrs["cpu.numcores"] = strconv.Itoa(cpu.cores)
	attrs["cpu.frequency"] = strconv.Itoa(cpu.mhz)
	total := int64(cpu.cores) * int64(cpu.mhz)
	attrs["cpu.totalcompute"] = strconv.FormatInt(total, 10)
	if cpu.model != "" {
		attrs["cpu.modelname"] = cpu.model
	}
	r.Resources.Cpu = structs.NodeCpuResources{CpuShares: total, TotalCpuCores: uint16(cpu.cores)}

	// Memory.
	memBytes := readMemTotal(cfg.ProcRoot)
	if memBytes <= 0 {
		log.Warn("total memory unknown; using a default", "memory_mb", DefaultMemoryMB)
		memBytes = DefaultMemoryMB << 20
	}
	attrs["memory.totalbytes"] = strconv.FormatInt(memBytes, 10)
	r.Resources.Memory.MemoryMB = memBytes >> 20

	// Disk.
	if cfg.DataDir != "" {
		var st syscall.Statfs_t
		if err := syscall.Statfs(cfg.DataDir, &st); err == nil {
			totalB := int64(st.Blocks) * int64(st.Bsize)
			freeB := int64(st.Bavail) * int64(st.Bsize)
			attrs["unique.storage.volume"] = cfg.DataDir
			attrs["unique.storage.bytestotal"] = strconv.FormatInt(totalB, 10)
			attrs["unique.storage.bytesfree"] = strconv.FormatInt(freeB, 10)
			r.Resources.Disk.DiskMB = freeB >> 20
		} else {
			log.Warn("cannot measure disk space", "data_dir", cfg.DataDir, "error", err)
		}
	}

	// Kernel and OS.
	attrs["kernel.name"] = runtime.GOOS
	if v := readTrim(filepath.Join(cfg.ProcRoot, "sys", "kernel", "ostype")); v != "" {
		attrs["kernel.name"] = strings.ToLower(v)
	}
	if v := readTrim(filepath.Join(cfg.ProcRoot, "sys", "kernel", "osrelease")); v != "" {
		attrs["kernel.version"] = v
	}
	if m := unameMachine(); m != "" {
		attrs["kernel.arch"] = m
	}
	osName, osVersion := readOSRelease(filepath.Join(cfg.EtcRoot, "os-release"))
	if osName == "" {
		osName = runtime.GOOS
	}
	attrs["os.name"] = osName
	if osVersion != "" {
		attrs["os.version"] = osVersion
	}

	// Host.
	if h, err := os.Hostname(); err == nil {
		attrs["unique.hostname"] = h
	}
	ip := ipAddress(cfg)
	// Networks: the default host network and the host_network blocks.
	list := cfg.interfaces
	if list == nil {
		list = systemInterfaces
	}
	ifaces := list()
	r.Resources.NodeNetworks = networks(cfg.Network, cfg.NetworkAddr, ifaces, defaultRouteInterface(cfg.ProcRoot))
	for _, n := range r.Resources.NodeNetworks {
		for _, a := range n.Addresses {
			if a.Alias == structs.DefaultHostNetwork && cfg.NetworkAddr == "" && cfg.Network.Interface != "" {
				ip = a.Address // network_interface names the node's address
			}
		}
	}
	if len(r.Resources.NodeNetworks) == 0 {
		log.Warn("no network interface found for the default host network; jobs asking for ports will not be placed here",
			"network_interface", cfg.Network.Interface)
	}
	r.Resources.MinDynamicPort = cfg.Network.MinDynamicPort
	r.Resources.MaxDynamicPort = cfg.Network.MaxDynamicPort
	attrs["unique.network.ip-address"] = ip
	attrs["drover.version"] = version.Version
	return r
}

type cpuInfo struct {
	cores int
	mhz   int
	model string
}

// readCPU counts processors and reads the per-core MHz (the highest
// reported) and model from cpuinfo; the core count is capped by what this
// process may use. Without MHz in cpuinfo, cpufreq's maximum is used.
func readCPU(procRoot string, numCPU int) cpuInfo {
	var info cpuInfo
	b, _ := os.ReadFile(filepath.Join(procRoot, "cpuinfo"))
	var mhz float64
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "processor":
			info.cores++
		case "cpu MHz":
			if f, err := strconv.ParseFloat(v, 64); err == nil && f > mhz {
				mhz = f
			}
		case "model name":
			if info.model == "" {
				info.model = v
			}
		}
	}
	if info.cores == 0 || (numCPU > 0 && numCPU < info.cores) {
		info.cores = numCPU
	}
	if info.cores <= 0 {
		info.cores = 1
	}
	info.mhz = int(mhz + 0.5)
	if info.mhz == 0 {
		// cpufreq reports kHz.
		root := filepath.Dir(filepath.Clean(procRoot))
		if khz, err := strconv.Atoi(readTrim(filepath.Join(root, "sys", "devices", "system", "cpu", "cpu0", "cpufreq", "cpuinfo_max_freq"))); err == nil {
			info.mhz = khz / 1000
		}
	}
	return info
}

// readMemTotal returns MemTotal from meminfo in bytes (0 if unknown).
func readMemTotal(procRoot string) int64 {
	b, err := os.ReadFile(filepath.Join(procRoot, "meminfo"))
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "MemTotal:") {
			continue
		}
		f := strings.Fields(line[len("MemTotal:"):])
		if len(f) == 0 {
			return 0
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0
		}
		return kb * 1024
	}
	return 0
}

// readOSRelease returns ID and VERSION_ID from os-release.
func readOSRelease(path string) (string, string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", ""
	}
	var id, ver string
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		v = strings.Trim(v, `"'`)
		switch k {
		case "ID":
			id = v
		case "VERSION_ID":
			ver = v
		}
	}
	return id, ver
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func unameMachine() string {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return ""
	}
	var b []byte
	for _, c := range u.Machine {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

// ipAddress picks the node's address: the configured one, else the local
// address that routes to the first server, else the first global unicast
// IPv4 address, else loopback.
func ipAddress(cfg Config) string {
	if cfg.NetworkAddr != "" {
		return cfg.NetworkAddr
	}
	for _, a := range cfg.ReachAddrs {
		// A UDP "dial" sends nothing; it only picks the route.
		c, err := net.Dial("udp", a)
		if err != nil {
			continue
		}
		host, _, _ := net.SplitHostPort(c.LocalAddr().String())
		c.Close()
		if host != "" {
			return host
		}
	}
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && ipn.IP.IsGlobalUnicast() {
				return ipn.IP.String()
			}
		}
	}
	return "127.0.0.1"
}
