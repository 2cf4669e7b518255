package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

func TestRoles(t *testing.T) {
	for _, tc := range []struct {
		desc       string
		role       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{desc: "nnp prints the effective uid", role: "nnp", wantStdout: fmt.Sprintf("Effective uid: %d\n", os.Geteuid())},
		{desc: "unknown role is refused", role: "standin", wantCode: 2, wantStderr: "unknown role"},
		{desc: "pgrep needs a pattern", role: "pgrep", args: []string{"pgrep"}, wantCode: 2, wantStderr: "usage"},
		{desc: "pgrep rejects a bad pattern", role: "pgrep", args: []string{"pgrep", "("}, wantCode: 2, wantStderr: "pgrep:"},
		{desc: "pgrep without a match exits 1", role: "pgrep", args: []string{"pgrep", "^no-such-process-name$"}, wantCode: 1},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.role, "/nonexistent", tc.args, &stdout, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d (stderr %q)", code, tc.wantCode, stderr.String())
			}
			if tc.wantStdout != "" && stdout.String() != tc.wantStdout {
				t.Errorf("stdout %q, want %q", stdout.String(), tc.wantStdout)
			}
			if !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("stderr %q, want it to contain %q", stderr.String(), tc.wantStderr)
			}
		})
	}
}

func TestPgrepFindsAProcessByName(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary on this machine to look for")
	}
	cmd := exec.Command(sleep, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	var stdout, stderr bytes.Buffer
	if code := run("pgrep", "", []string{"pgrep", "^sleep$"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	if !strings.Contains("\n"+stdout.String(), "\n"+strconv.Itoa(cmd.Process.Pid)+"\n") {
		t.Errorf("pgrep printed %q, want pid %d among them", stdout.String(), cmd.Process.Pid)
	}
}

func TestIpcsListsSegmentsOfItsNamespace(t *testing.T) {
	raw, err := os.ReadFile("/proc/sysvipc/shm")
	if err != nil {
		t.Skip("no /proc/sysvipc/shm on this machine")
	}
	var stdout, stderr bytes.Buffer
	if code := run("ipcs", "", nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")[1:]
	out := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(out) != 2+len(lines) {
		t.Fatalf("ipcs printed %d lines for %d segments:\n%s", len(out), len(lines), stdout.String())
	}
	for i, l := range lines {
		shmid := strings.Fields(l)[1]
		if got := strings.Fields(out[2+i])[1]; got != shmid {
			t.Errorf("segment %d: shmid %s, want %s", i, got, shmid)
		}
	}
}
