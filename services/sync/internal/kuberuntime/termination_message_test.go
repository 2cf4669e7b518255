package kuberuntime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// criLog renders lines as a CRI log file's content, alternating stdout and
// stderr so that both streams count.
func criLog(lines ...string) string {
	var b strings.Builder
	for i, l := range lines {
		stream := "stdout"
		if i%2 == 1 {
			stream = "stderr"
		}
		fmt.Fprintf(&b, "2025-01-01T00:00:%02d.000000000Z %s F %s\n", i%60, stream, l)
	}
	return b.String()
}

func numberedLines(n int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %d", i)
	}
	return lines
}

func joinLines(lines []string) string { return strings.Join(lines, "\n") + "\n" }

func TestConvertToKubeContainerStatusTerminationMessage(t *testing.T) {
	const msgPath = "/dev/termination-log"
	long := strings.Repeat("a", 100) + strings.Repeat("b", maxContainerTerminationMessageLength)
	for _, tc := range []struct {
		desc          string
		state         runtimeapi.ContainerState
		exitCode      int32
		reason        string
		runtimeMsg    string
		policy        v1.TerminationMessagePolicy
		file          *string // nil: no file on the host
		dirAsFile     bool    // the mount's host path is a directory
		noMount       bool
		log           string
		want          string
		wantPrefix    string // instead of want, for error messages
		wantFromLines int    // instead of want: the log's tail from this line
	}{
		{desc: "the file's content when the container exits",
			state: runtimeapi.ContainerState_CONTAINER_EXITED, policy: v1.TerminationMessageReadFile,
			file: new("DONE"), want: "DONE"},
		{desc: "nothing while the container runs",
			state: runtimeapi.ContainerState_CONTAINER_RUNNING, policy: v1.TerminationMessageReadFile,
			file: new("DONE"), want: ""},
		{desc: "a long file is cut to its last 4 KiB",
			state: runtimeapi.ContainerState_CONTAINER_EXITED, policy: v1.TerminationMessageReadFile,
			file: &long, want: strings.Repeat("b", maxContainerTerminationMessageLength)},
		{desc: "appended to the runtime's message",
			state: runtimeapi.ContainerState_CONTAINER_EXITED, exitCode: 137, reason: "OOMKilled", runtimeMsg: "out of memory",
			policy: v1.TerminationMessageReadFile, file: new("bye"), want: "out of memory: bye"},
		{desc: "ReadFile never reads the log",
			state: runtimeapi.ContainerState_CONTAINER_EXITED, exitCode: 1, policy: v1.TerminationMessageReadFile,
			file: new(""), log: criLog("failed"), want: ""},
		{desc: "FallbackToLogsOnError: a failed container with an empty file gives its log",
			state: runtimeapi.ContainerState_CONTAINER_EXITED, exitCode: 1, policy: v1.TerminationMessageFallbackToLogsOnError,
			file: new(""), log: criLog("starting", "failed"), want: "starting\nfailed\n"},
		{desc: "FallbackToLogsOnError: the file wins when it has something",
			state: runtimeapi.ContainerState_CONTAINER_EXITED, exitCode: 1, policy: v1.TerminationMessageFallbackToLogsOnError,
			file: new("from file"), log: criLog("from log"), want: "from file"},
		{desc: "FallbackToLogsOnError: no file on the host gives the log",
			state: runtimeapi.ContainerState_CONTAINER_EXITED, exitCode: 2, policy: v1.TerminationMessageFallbackToLogsOnError,
			log: criLog("from log"), want: "from log\n"},
		{desc: "FallbackToLogsOnError: no mount gives the log",
			state: runtimeapi.ContainerState_CONTAINER_EXITED, exitCode: 2, policy: v1.TerminationMessageFallbackToLogsOnError,
			noMount: true, log: criLog("from log"), want: "from log\n"},
		{desc: "FallbackToLogsOnError: a success does not read the log",
			state: runtimeapi.ContainerState_CONTAINER_EXITED, policy: v1.TerminationMessageFallbackToLogsOnError,
			file: new(""), log: criLog("all good"), want: ""},
		{desc: "FallbackToLogsOnError: a container that never ran has no log to read",
			state: runtimeapi.ContainerState_CONTAINER_EXITED, exitCode: 128, reason: reasonContainerCannotRun, runtimeMsg: "no such file",
			policy: v1.TerminationMessageFallbackToLogsOnError, file: new(""), log: criLog("x"), want: "no such file"},
		{desc: "FallbackToLogsOnError: the log's last 80 lines",
			state: runtimeapi.ContainerState_CONTAINER_EXITED, exitCode: 1, policy: v1.TerminationMessageFallbackToLogsOnError,
			file: new(""), log: criLog(numberedLines(100)...), wantFromLines: 20},
		{desc: "FallbackToLogsOnError: the log's last 2 KiB",
			state: runtimeapi.ContainerState_CONTAINER_EXITED, exitCode: 1, policy: v1.TerminationMessageFallbackToLogsOnError,
			file: new(""), log: criLog(strings.Repeat("x", 3000), "tail"),
			want: strings.Repeat("x", maxContainerTerminationMessageLogLength-len("\ntail\n")) + "\ntail\n"},
		{desc: "an unreadable file says why",
			state: runtimeapi.ContainerState_CONTAINER_EXITED, exitCode: 1, policy: v1.TerminationMessageFallbackToLogsOnError,
			dirAsFile: true, log: criLog("from log"), wantPrefix: "Error on reading termination log "},
		{desc: "a missing log says why",
			state: runtimeapi.ContainerState_CONTAINER_EXITED, exitCode: 1, policy: v1.TerminationMessageFallbackToLogsOnError,
			file: new(""), wantPrefix: "Error on reading termination message from logs: "},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := t.TempDir()
			hostPath := filepath.Join(dir, "termination-log")
			switch {
			case tc.dirAsFile:
				if err := os.Mkdir(hostPath, 0o755); err != nil {
					t.Fatal(err)
				}
			case tc.file != nil:
				if err := os.WriteFile(hostPath, []byte(*tc.file), 0o666); err != nil {
					t.Fatal(err)
				}
			}
			logPath := filepath.Join(dir, "0.log")
			if tc.log != "" {
				if err := os.WriteFile(logPath, []byte(tc.log), 0o640); err != nil {
					t.Fatal(err)
				}
			}
			s := &runtimeapi.ContainerStatus{
				Id:       "c1",
				Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
				State:    tc.state,
				ExitCode: tc.exitCode,
				Reason:   tc.reason,
				Message:  tc.runtimeMsg,
				LogPath:  logPath,
				Annotations: map[string]string{
					ContainerTerminationMessagePathLabel:   msgPath,
					ContainerTerminationMessagePolicyLabel: string(tc.policy),
				},
			}
			if !tc.noMount {
				s.Mounts = []*runtimeapi.Mount{{ContainerPath: "/etc/hosts", HostPath: "/nonexistent"}, {ContainerPath: msgPath, HostPath: hostPath}}
			}
			want := tc.want
			if tc.wantFromLines > 0 {
				want = joinLines(numberedLines(100)[tc.wantFromLines:])
			}
			got := convertToKubeContainerStatus(context.Background(), testRuntime, s).Message
			if tc.wantPrefix != "" {
				if !strings.HasPrefix(got, tc.wantPrefix) {
					t.Errorf("message = %q, want it to start with %q", got, tc.wantPrefix)
				}
				return
			}
			if got != want {
				t.Errorf("message = %q, want %q", got, want)
			}
		})
	}
}

func TestLastBytes(t *testing.T) {
	for _, tc := range []struct {
		desc   string
		writes []string
		want   string
	}{
		{desc: "under the size", writes: []string{"ab", "cd"}, want: "abcd"},
		{desc: "exactly the size", writes: []string{"abcde"}, want: "abcde"},
		{desc: "older bytes drop out", writes: []string{"abc", "def"}, want: "bcdef"},
		{desc: "one write larger than the size", writes: []string{"a", "0123456789"}, want: "56789"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			w := &lastBytes{size: 5}
			for _, s := range tc.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", s, n, err)
				}
			}
			if got := string(w.b); got != tc.want {
				t.Errorf("kept %q, want %q", got, tc.want)
			}
		})
	}
}
