package e2e

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// testExecInteractive: `splitctl exec -i` and `-it` stream into the real
// app container through the gateway's streaming proxy, which forwards to
// containerd's streaming server; the remote command's exit code comes back
// as splitctl's.
func testExecInteractive(t *testing.T, e *env) {
	splitctl := filepath.Join(os.Getenv("SPLITLET_BIN_DIR"), "splitctl")
	if _, err := os.Stat(splitctl); err != nil {
		t.Skipf("no splitctl binary (SPLITLET_BIN_DIR=%q): %v", os.Getenv("SPLITLET_BIN_DIR"), err)
	}
	before := proxiedExecs(t)
	run := func(stdin string, args ...string) (string, string, int) {
		cmd := exec.Command(splitctl, append([]string{"-n", namespace}, args...)...)
		cmd.Env = append(os.Environ(), "SPLITLET_SERVER="+os.Getenv("SPLITLET_SYNC_ADDR"))
		cmd.Stdin = strings.NewReader(stdin)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("splitctl %s: %v", strings.Join(args, " "), err)
		}
		return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
	}

	stdout, stderr, code := run("echo interactive-ok\nexit 3\n", "exec", "-i", "init-app", "-c", "app", "--", "sh")
	if code != 3 || stdout != "interactive-ok\n" {
		t.Errorf("splitctl exec -i sh: exit %d, stdout %q, stderr %q; want exit 3 and the echoed line", code, stdout, stderr)
	}
	stdout, _, code = run(strings.Repeat("0123456789abcdef", 1<<12), "exec", "-i", "init-app", "-c", "app", "--", "wc", "-c")
	if code != 0 || strings.TrimSpace(stdout) != strconv.Itoa(16<<12) {
		t.Errorf("64 KiB through exec -i wc -c: exit %d, counted %q", code, stdout)
	}

	// -t needs a terminal on splitctl's stdin: script(1) gives it one.
	if script, err := exec.LookPath("script"); err != nil {
		t.Log("no script(1) to give splitctl a terminal: exec -it not tried")
	} else {
		line := strings.Join([]string{splitctl, "-n", namespace, "exec", "-it", "init-app", "-c", "app", "--", "sh", "-c", "'tty; exit 4'"}, " ")
		cmd := exec.Command(script, "-qec", line, "/dev/null")
		cmd.Env = append(os.Environ(), "SPLITLET_SERVER="+os.Getenv("SPLITLET_SYNC_ADDR"))
		out, _ := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 4 || !strings.Contains(string(out), "/dev/pts/") {
			t.Errorf("splitctl exec -it: exit %d, output %q; want a /dev/pts terminal and exit 4", code, out)
		}
	}

	if before >= 0 {
		if after := proxiedExecs(t); after < before+3 {
			t.Errorf("the gateway proxied %v execs during the test, want at least 3: the streams bypassed it", after-before)
		}
	}
}

var proxiedExecLine = regexp.MustCompile(`(?m)^splitlet_gateway_streams_total\{kind="exec",result="proxied"\} (\d+)$`)

// proxiedExecs reads the gateway's count of proxied execs, or -1 when the
// stack serves no gateway metrics.
func proxiedExecs(t *testing.T) int {
	base := os.Getenv("SPLITLET_GATEWAY_METRICS")
	if base == "" {
		t.Log("SPLITLET_GATEWAY_METRICS not set: whether streams go through the gateway is not checked")
		return -1
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatalf("gateway metrics: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := proxiedExecLine.FindSubmatch(body)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}
