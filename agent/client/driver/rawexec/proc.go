package rawexec

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// procStat is what the driver needs from /proc/<pid>/stat.
type procStat struct {
	State     byte   // field 3: R, S, D, Z, ...
	StartTime uint64 // field 22: start time in clock ticks after boot
}

// errNoProcess reports that /proc has no entry for the PID.
var errNoProcess = errors.New("no such process")

// readProcStat reads /proc/<pid>/stat under procRoot.
func readProcStat(procRoot string, pid int) (procStat, error) {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		if os.IsNotExist(err) || errors.Is(err, os.ErrNotExist) {
			return procStat{}, errNoProcess
		}
		return procStat{}, err
	}
	return parseProcStat(b)
}

// parseProcStat parses the stat line. The command name (field 2) is in
// parentheses and may contain spaces and parentheses, so fields are counted
// after the last ')'.
func parseProcStat(b []byte) (procStat, error) {
	end := bytes.LastIndexByte(b, ')')
	if end < 0 || end+2 > len(b) {
		return procStat{}, fmt.Errorf("malformed stat line")
	}
	fields := bytes.Fields(b[end+1:])
	// fields[0] is field 3 (state); field 22 is fields[19].
	if len(fields) < 20 || len(fields[0]) != 1 {
		return procStat{}, fmt.Errorf("malformed stat line: %d fields", len(fields))
	}
	st, err := strconv.ParseUint(string(fields[19]), 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("malformed start time: %w", err)
	}
	return procStat{State: fields[0][0], StartTime: st}, nil
}

// alive reports whether the process exists and has not exited (a zombie
// has exited).
func (s procStat) alive() bool { return s.State != 'Z' && s.State != 'X' && s.State != 'x' }

// procUsage is what stats need from /proc/<pid>/stat.
type procUsage struct {
	PPID, PGID   int
	UTime, STime uint64 // clock ticks
	RSSPages     uint64
}

// parseProcUsage reads fields 4, 5, 14, 15 and 24 of a stat line.
func parseProcUsage(b []byte) (procUsage, error) {
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return procUsage{}, fmt.Errorf("malformed stat line")
	}
	f := bytes.Fields(b[end+1:])
	if len(f) < 22 {
		return procUsage{}, fmt.Errorf("malformed stat line: %d fields", len(f))
	}
	num := func(i int) uint64 { n, _ := strconv.ParseUint(string(f[i]), 10, 64); return n }
	ppid, _ := strconv.Atoi(string(f[1]))
	pgid, _ := strconv.Atoi(string(f[2]))
	return procUsage{PPID: ppid, PGID: pgid, UTime: num(11), STime: num(12), RSSPages: num(21)}, nil
}
