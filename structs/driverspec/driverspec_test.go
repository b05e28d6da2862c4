package driverspec

import (
	"errors"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
)

func TestValidateTaskConfig(t *testing.T) {
	tests := []struct {
		name   string
		driver string
		cfg    map[string]any
		// wantFields lists the fields named in the error, in order; nil
		// means valid.
		wantFields []string
		wantText   string
	}{
		{"raw_exec valid", "raw_exec", map[string]any{"command": "/bin/sh", "args": []any{"-c", "echo hi"}}, nil, ""},
		{"raw_exec []string args", "raw_exec", map[string]any{"command": "sh", "args": []string{"-c", "true"}}, nil, ""},
		{"raw_exec relative inside", "raw_exec", map[string]any{"command": "local/run.sh"}, nil, ""},
		{"missing command", "raw_exec", map[string]any{"args": []any{"x"}}, []string{"Config.command"}, "is required"},
		{"empty command", "raw_exec", map[string]any{"command": " "}, []string{"Config.command"}, "must not be empty"},
		{"wrong types", "raw_exec", map[string]any{"command": 42, "args": "x"}, []string{"Config.args", "Config.command"}, "must be a"},
		{"args element type", "raw_exec", map[string]any{"command": "sh", "args": []any{"-c", 3}}, []string{"Config.args"}, "element 1 must be a string"},
		{"unknown key", "raw_exec", map[string]any{"command": "sh", "image": "redis"}, []string{"Config.image"}, "unknown field"},
		{"escape", "raw_exec", map[string]any{"command": "../../bin/sh"}, []string{"Config.command"}, "inside the task directory"},
		{"escape hidden", "raw_exec", map[string]any{"command": "local/../../x"}, []string{"Config.command"}, "inside the task directory"},
		{"mock valid", "mock_driver", map[string]any{"run_for": "10ms", "exit_code": float64(3), "kill_after": int64(5)}, nil, ""},
		{"mock alias", "mock", map[string]any{"run_for": "1s"}, nil, ""},
		{"mock bad duration", "mock_driver", map[string]any{"run_for": "soon"}, []string{"Config.run_for"}, "duration"},
		{"mock fractional exit code", "mock_driver", map[string]any{"exit_code": 1.5}, []string{"Config.exit_code"}, "integer"},
		{"mock negative duration", "mock_driver", map[string]any{"run_for": "-1s"}, []string{"Config.run_for"}, "negative"},
		{"exec valid", "exec", map[string]any{"command": "/bin/sh", "args": []any{"-c", "true"}, "pid_mode": "host",
			"ipc_mode": "private", "cap_add": []any{"CAP_NET_BIND_SERVICE"}, "cap_drop": []any{"all"}}, nil, ""},
		{"exec bad modes", "exec", map[string]any{"command": "sh", "pid_mode": "shared", "ipc_mode": "none"},
			[]string{"Config.pid_mode", "Config.ipc_mode"}, "must be"},
		{"exec unknown capability", "exec", map[string]any{"command": "sh", "cap_add": []any{"fly"}}, []string{"Config.cap_add"}, "unknown capability"},
		{"exec no_pivot is a plugin option", "exec", map[string]any{"command": "sh", "no_pivot_root": true}, []string{"Config.no_pivot_root"}, "unknown field"},
		{"unknown driver", "podman", map[string]any{"image": "redis"}, []string{"Driver"}, "unknown driver"},
		{"docker valid", "docker", map[string]any{"image": "busybox:1", "command": "sh", "args": []any{"-c", "true"},
			"ports": []any{"http"}, "auth": []any{map[string]any{"username": "u", "password": "p"}},
			"labels": []any{map[string]any{"a": "b"}}, "ulimit": map[string]any{"nofile": "1024:2048", "nproc": 64},
			"mount":              []any{map[string]any{"type": "tmpfs", "target": "/t", "tmpfs_options": []any{map[string]any{"size": 1000}}}},
			"logging":            map[string]any{"type": "json-file", "config": []any{map[string]any{"max-size": "1m"}}},
			"image_pull_timeout": "1m", "volumes": []any{"/a:/b:ro"}}, nil, ""},
		{"docker missing image", "docker", map[string]any{"command": "sh"}, []string{"Config.image"}, "is required"},
		{"docker empty image", "docker", map[string]any{"image": ""}, []string{"Config.image"}, "must not be empty"},
		{"docker typo", "docker", map[string]any{"image": "x", "comand": "sh"}, []string{"Config.comand"}, "unknown field"},
		{"docker nested typo", "docker", map[string]any{"image": "x", "auth": []any{map[string]any{"user": "u"}}},
			[]string{"Config.auth.user"}, "unknown field"},
		{"docker mount typo", "docker", map[string]any{"image": "x", "mount": []any{map[string]any{"target": "/a"}, map[string]any{"targte": "/b"}}},
			[]string{"Config.mount[1].targte"}, "unknown field"},
		{"docker mount type", "docker", map[string]any{"image": "x", "mount": []any{map[string]any{"type": "nfs", "target": "/a"}}},
			[]string{"Config.mount[0].type"}, "must be"},
		{"docker two auth blocks", "docker", map[string]any{"image": "x", "auth": []any{map[string]any{}, map[string]any{}}},
			[]string{"Config.auth"}, "single block"},
		{"docker refused by name", "docker", map[string]any{"image": "x", "port_map": []any{map[string]any{"db": 1}}},
			[]string{"Config.port_map"}, "Drover does not support the docker driver's port_map"},
		{"docker bad volume", "docker", map[string]any{"image": "x", "volumes": []any{"/a"}}, []string{"Config.volumes[0]"}, "host_path:container_path"},
		{"docker bad ulimit", "docker", map[string]any{"image": "x", "ulimit": map[string]any{"nofile": "9:1"}}, []string{"Config.ulimit.nofile"}, "above the hard limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateTaskConfig(tc.driver, tc.cfg)
			if tc.wantFields == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var ve *structs.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("want *structs.ValidationError, got %T %v", err, err)
			}
			var fields []string
			for _, fe := range ve.Errors {
				fields = append(fields, fe.Field)
			}
			if !reflect.DeepEqual(fields, tc.wantFields) {
				t.Fatalf("fields = %v, want %v (%v)", fields, tc.wantFields, err)
			}
			if !strings.Contains(err.Error(), tc.wantText) {
				t.Fatalf("error %q does not mention %q", err, tc.wantText)
			}
			if structs.CodeOf(err) != structs.ErrCodeInvalid {
				t.Fatalf("code = %v", structs.CodeOf(err))
			}
		})
	}
}

func TestSchemaDecodeNormalises(t *testing.T) {
	s := Schema{"d": {Type: TypeDuration}, "i": {Type: TypeInt}, "b": {Type: TypeBool},
		"l": {Type: TypeStringList}, "m": {Type: TypeStringMap}}
	got, err := s.Decode(map[string]any{"d": "2s", "i": uint64(7), "b": "true",
		"l": []any{"a"}, "m": map[string]any{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"d": 2 * time.Second, "i": int64(7), "b": true,
		"l": []string{"a"}, "m": map[string]string{"k": "v"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v want %#v", got, want)
	}
}

func TestParseSignal(t *testing.T) {
	tests := []struct {
		in   string
		want syscall.Signal
		ok   bool
	}{
		{"", syscall.SIGINT, true}, {"SIGTERM", syscall.SIGTERM, true}, {"term", syscall.SIGTERM, true},
		{"SIGKILL", syscall.SIGKILL, true}, {"SIGNOPE", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSignal(tc.in)
			if (err == nil) != tc.ok || got != tc.want {
				t.Fatalf("ParseSignal(%q) = %v, %v", tc.in, got, err)
			}
		})
	}
}

func TestResolveInTaskDir(t *testing.T) {
	tests := []struct {
		cmd, want string
		ok        bool
	}{
		{"/bin/sh", "/bin/sh", true},
		{"sh", "sh", true},
		{"local/x", "/t/local/x", true},
		{"./x", "/t/x", true},
		{"../x", "", false},
		{"local/../../x", "", false},
	}
	for _, tc := range tests {
		got, err := ResolveInTaskDir("/t", tc.cmd)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ResolveInTaskDir(%q) = %q, %v", tc.cmd, got, err)
		}
	}
}

func TestTaskCapabilities(t *testing.T) {
	got, err := TaskCapabilities(NomadDefaultCapabilities, []string{"CAP_CHOWN"}, []string{"all"})
	if err != nil || !reflect.DeepEqual(got, []string{"chown"}) {
		t.Fatalf("drop all, add chown: %v, %v", got, err)
	}
	got, err = TaskCapabilities(NomadDefaultCapabilities, nil, []string{"kill", "mknod"})
	if err != nil || len(got) != len(NomadDefaultCapabilities)-2 {
		t.Fatalf("defaults minus two: %v, %v", got, err)
	}
	if _, err := TaskCapabilities(NomadDefaultCapabilities, []string{"net_raw", "sys_admin"}, nil); err == nil ||
		err.Error() != "driver does not allow the following capabilities: net_raw, sys_admin" {
		t.Fatalf("not allowed: %v", err)
	}
}
