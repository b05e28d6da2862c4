//go:build !unix

package bench

import "io/fs"

// diskUsage is the file's apparent size (block counts are not available).
func diskUsage(info fs.FileInfo) int64 { return info.Size() }
