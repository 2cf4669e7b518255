package pluginhost

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
)

// envHost makes the test binary a plugin host (runHost) instead of running
// tests: it starts the plugin binary the variable names and waits to be
// killed.
const envHost = "PLUGINHOST_TEST_HOST"

// runHost starts the plugin at path as admission does, prints its pid and
// blocks until killed.
func runHost(path, sum string) int {
	inst, err := processLauncher(&PluginConfig{Name: "host-test", Path: path, SHA256: sum}, zap.NewNop(), 10*time.Second, nil)(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the plugin:", err)
		return 1
	}
	fmt.Println(inst.pid)
	select {}
}

// A plugin does not outlive a host that was SIGKILLed (an admission crash):
// the kernel kills it with its parent.
func TestPluginDiesWithItsHost(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux has a parent-death signal (dieWithHost)")
	}
	_, testplugin := pluginBinaries(t)
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), envHost+"="+testplugin, envHost+"_SUM="+sha256File(t, testplugin))
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	host.Stderr = os.Stderr
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Process.Kill(); _ = host.Wait() })
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		s.Scan()
		line <- s.Text()
	}()
	var pid int
	select {
	case l := <-line:
		if pid, err = strconv.Atoi(strings.TrimSpace(l)); err != nil || pid <= 0 {
			t.Fatalf("the host printed %q, want the plugin's pid", l)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the host did not start the plugin within 30 s")
	}
	// Never leave the plugin behind, whatever the outcome.
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })

	if err := host.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = host.Wait()
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for processRuns(pid) {
		select {
		case <-deadline:
			t.Fatalf("plugin pid %d still runs 10 s after its host was SIGKILLed", pid)
		case <-tick.C:
		}
	}
}

// processRuns says whether pid runs; a zombie (dead, not yet reaped by its
// new parent) does not.
func processRuns(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}
