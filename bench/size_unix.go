//go:build unix

package bench

import (
	"io/fs"
	"syscall"
)

// diskUsage is the space a file takes on disk (allocated blocks).
func diskUsage(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return info.Size()
}
