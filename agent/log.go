package agent

import (
	"io"

	"github.com/hashicorp/go-hclog"
)

// NewLogger returns the agent's root logger, writing to out at the
// configured level, as JSON when LogJSON is set. Components take named
// children of it ("agent", "http", "server", ...).
func NewLogger(c *Config, out io.Writer) hclog.Logger {
	level := hclog.LevelFromString(c.LogLevel)
	if level == hclog.NoLevel {
		level = hclog.Info
	}
	return hclog.New(&hclog.LoggerOptions{
		Name:            "drover",
		Level:           level,
		Output:          out,
		JSONFormat:      c.LogJSON,
		IncludeLocation: false,
		TimeFormat:      "2006-01-02T15:04:05.000Z0700",
	})
}
