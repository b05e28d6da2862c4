package structs

// Nomad's logs block defaults: ten files of 10 MB per stream.
const (
	DefaultLogMaxFiles      = 10
	DefaultLogMaxFileSizeMB = 10
)

// LogConfig is a task's logs block: how the client rotates the task's
// stdout and stderr files (MaxFiles files of MaxFileSizeMB each per
// stream, the oldest removed), or, with Disabled, that it keeps no log
// files at all (the output is read and dropped).
type LogConfig struct {
	MaxFiles      int
	MaxFileSizeMB int
	Disabled      bool
}

// DefaultLogConfig returns Nomad's logs block defaults.
func DefaultLogConfig() *LogConfig {
	return &LogConfig{MaxFiles: DefaultLogMaxFiles, MaxFileSizeMB: DefaultLogMaxFileSizeMB}
}

func (l *LogConfig) validate(v *validator, p string) {
	if l.MaxFiles < 1 {
		v.add(join(p, "LogConfig.MaxFiles"), "must be at least 1; got %d", l.MaxFiles)
	}
	if l.MaxFileSizeMB < 1 {
		v.add(join(p, "LogConfig.MaxFileSizeMB"), "must be at least 1 (MB); got %d", l.MaxFileSizeMB)
	}
	if l.MaxFiles > maxLogFiles {
		v.add(join(p, "LogConfig.MaxFiles"), "must be at most %d; got %d", maxLogFiles, l.MaxFiles)
	}
	if l.MaxFileSizeMB > MaxTaskDiskMB {
		v.add(join(p, "LogConfig.MaxFileSizeMB"), "must be at most %d; got %d", MaxTaskDiskMB, l.MaxFileSizeMB)
	}
}

// maxLogFiles bounds max_files (a rotation lists the directory and
// removes what is past the count).
const maxLogFiles = 1 << 16

// EffectiveRestartPolicy is the restart policy that applies to task t of
// group tg: the task's own (laid over the group's at registration) or the
// group's.
func EffectiveRestartPolicy(tg *TaskGroup, t *Task) *RestartPolicy {
	if t != nil && t.RestartPolicy != nil {
		return t.RestartPolicy
	}
	if tg == nil {
		return nil
	}
	return tg.RestartPolicy
}
