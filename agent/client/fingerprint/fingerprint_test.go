package fingerprint

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFingerprintFromFixtures(t *testing.T) {
	root := t.TempDir()
	proc, etc := filepath.Join(root, "proc"), filepath.Join(root, "etc")
	cpuinfo := ""
	for i := 0; i < 4; i++ {
		cpuinfo += "processor\t: " + string(rune('0'+i)) + "\nmodel name\t: Test CPU @ 2.50GHz\ncpu MHz\t\t: 2499.998\n\n"
	}
	writeFile(t, filepath.Join(proc, "cpuinfo"), cpuinfo)
	writeFile(t, filepath.Join(proc, "meminfo"), "MemTotal:        8048576 kB\nMemFree:  100 kB\n")
	writeFile(t, filepath.Join(proc, "sys", "kernel", "ostype"), "Linux\n")
	writeFile(t, filepath.Join(proc, "sys", "kernel", "osrelease"), "6.1.0-test\n")
	writeFile(t, filepath.Join(etc, "os-release"), "NAME=\"Ubuntu\"\nID=ubuntu\nVERSION_ID=\"22.04\"\n")

	tests := []struct {
		name      string
		numCPU    int
		wantCores string
		wantTotal int64
	}{
		{"all cores usable", 8, "4", 4 * 2500},
		{"affinity limits cores", 2, "2", 2 * 2500},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Fingerprint(Config{ProcRoot: proc, EtcRoot: etc, DataDir: root, NetworkAddr: "10.1.2.3",
				NumCPU: func() int { return tc.numCPU }})
			want := map[string]string{
				"cpu.numcores": tc.wantCores, "cpu.frequency": "2500", "cpu.modelname": "Test CPU @ 2.50GHz",
				"cpu.arch": runtime.GOARCH, "memory.totalbytes": "8241741824",
				"kernel.name": "linux", "kernel.version": "6.1.0-test", "os.name": "ubuntu", "os.version": "22.04",
				"unique.network.ip-address": "10.1.2.3", "unique.storage.volume": root,
			}
			for k, v := range want {
				if got := r.Attributes[k]; got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if r.Resources.Cpu.CpuShares != tc.wantTotal || r.Resources.Memory.MemoryMB != 7859 {
				t.Errorf("resources = %+v", r.Resources)
			}
			if r.Attributes["unique.hostname"] == "" || r.Resources.Disk.DiskMB <= 0 {
				t.Errorf("hostname %q disk %d", r.Attributes["unique.hostname"], r.Resources.Disk.DiskMB)
			}
		})
	}
}

func TestFingerprintDefaults(t *testing.T) {
	empty := t.TempDir()
	r := Fingerprint(Config{ProcRoot: filepath.Join(empty, "proc"), EtcRoot: filepath.Join(empty, "etc"),
		NumCPU: func() int { return 3 }, ReachAddrs: []string{"127.0.0.1:4647"}})
	if r.Attributes["cpu.numcores"] != "3" || r.Attributes["cpu.frequency"] != "1000" ||
		r.Resources.Cpu.CpuShares != 3000 || r.Resources.Memory.MemoryMB != DefaultMemoryMB {
		t.Fatalf("defaults: %v %+v", r.Attributes, r.Resources)
	}
	if r.Attributes["unique.network.ip-address"] != "127.0.0.1" {
		t.Fatalf("ip = %q", r.Attributes["unique.network.ip-address"])
	}
}

func TestFingerprintRealMachine(t *testing.T) {
	r := Fingerprint(Config{DataDir: t.TempDir()})
	for _, k := range []string{"cpu.numcores", "cpu.totalcompute", "memory.totalbytes", "kernel.name", "os.name", "unique.hostname", "unique.network.ip-address"} {
		if r.Attributes[k] == "" {
			t.Errorf("%s missing", k)
		}
	}
	if r.Resources.Cpu.CpuShares <= 0 || r.Resources.Memory.MemoryMB <= 0 {
		t.Errorf("resources %+v", r.Resources)
	}
}
