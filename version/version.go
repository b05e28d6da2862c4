// Package version holds Drover's version, set at build time.
//
// It imports nothing and must never import another Drover package.
package version

// Version is the release version.
const Version = "0.1.0-dev"

// GitCommit is set with -ldflags "-X .../version.GitCommit=..." by make build.
var GitCommit = ""

// String returns "Drover v<version> (<commit>)".
func String() string {
	if GitCommit == "" {
		return "Drover v" + Version
	}
	return "Drover v" + Version + " (" + GitCommit + ")"
}
