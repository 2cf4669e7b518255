package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

// The node network: what a real node has and this VM's own namespace does
// not. A node has an address on an interface, a default route, a hostname
// that resolves, and a resolver that answers. In the machine's own
// namespace here the resolver (10.255.255.53) loses a query now and then,
// and the standalone kubelet looks its node name up on every admission and
// every SyncPod of a static pod (nodestatus.NodeAddress, through
// GetNode -> initialNode -> setNodeStatus, when no --node-ip is given), so
// one lost UDP packet stalls its sync loop for the resolver's 5 s timeout
// (BENCHMARKS.md, issue 24). The bench therefore re-executes itself in new
// network and mount namespaces and gives the node there:
//
//   - lo, and a bridge bench0 without ports holding NodeIP/24 with a default
//     route through it: traffic for any other address goes nowhere and never
//     leaves the namespace;
//   - /etc/hosts (the machine's, plus "NodeIP <node name>") and
//     /etc/resolv.conf (nameserver NodeIP, where nothing listens: a lookup
//     that reaches DNS is refused at once instead of waiting) bind-mounted
//     over the machine's, visible to this process and its children only.
//
// Both agents run inside it, and the kubelet gets --node-ip=NodeIP as a
// node with a known address would.

// NodeIP is the bench node's address inside its network namespace.
const NodeIP = "10.213.0.2"

const (
	nodeGateway = "10.213.0.1"
	nodeIface   = "bench0"
	// nodeNetEnv marks the re-executed process, so it sets the network up
	// instead of re-executing again.
	nodeNetEnv = "SPLITLET_BENCH_NODE_NET"
)

// ErrNeedRoot is returned when the node network is asked for without root.
var ErrNeedRoot = errors.New("the node network needs root (new network and mount namespaces); run as root or with -node-net host")

// InNodeNet reports whether this process is the copy RunInNodeNet started.
func InNodeNet() bool { return os.Getenv(nodeNetEnv) != "" }

// RunInNodeNet runs this program again, with the same arguments, in new
// network and mount namespaces, forwarding SIGINT and SIGTERM to it, and
// returns its exit code. The copy sees InNodeNet and calls SetupNodeNet.
func RunInNodeNet(ctx context.Context) (int, error) {
	if os.Geteuid() != 0 {
		return 0, ErrNeedRoot
	}
	cmd := exec.Command("/proc/self/exe", os.Args[1:]...)
	cmd.Args[0] = os.Args[0]
	cmd.Env = append(os.Environ(), nodeNetEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// CLONE_NEWNS in Unshareflags also makes the copy's mounts private
	// (the Go runtime remounts / with MS_REC|MS_PRIVATE), so the bind
	// mounts below never reach the machine.
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Unshareflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWNS,
		Pdeathsig:    syscall.SIGKILL,
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("re-execute in a new network namespace: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case s := <-sigs:
			_ = cmd.Process.Signal(s)
		case <-ctx.Done():
			_ = cmd.Process.Signal(syscall.SIGTERM)
			ctx = context.Background() // signalled once
		case err := <-done:
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return ee.ExitCode(), nil
			}
			return 0, err
		}
	}
}

// SetupNodeNet gives the namespace the node's network (see the top of
// this file); dir holds the hosts and resolv.conf files bind-mounted over
// /etc's. The bench node's name resolves to NodeIP.
func SetupNodeNet(dir string) error {
	if !InNodeNet() {
		return errors.New("SetupNodeNet outside the node network's namespaces")
	}
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		// A bridge, as CNI makes: this VM's kernel has no dummy links.
		{"link", "add", nodeIface, "type", "bridge"},
		{"addr", "add", NodeIP + "/24", "dev", nodeIface},
		{"link", "set", nodeIface, "up"},
		{"route", "add", "default", "via", nodeGateway, "dev", nodeIface},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	hosts, err := os.ReadFile("/etc/hosts")
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	files := map[string]string{
		"/etc/hosts":       string(hosts) + fmt.Sprintf("\n# splitlet-bench node network\n%s %s\n", NodeIP, benchNode),
		"/etc/resolv.conf": fmt.Sprintf("# splitlet-bench node network: nothing listens here, lookups are refused at once\nnameserver %s\n", NodeIP),
	}
	for target, content := range files {
		src := filepath.Join(dir, filepath.Base(target))
		if err := os.WriteFile(src, []byte(content), 0o644); err != nil {
			return err
		}
		if err := syscall.Mount(src, target, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind-mount %s over %s: %w", src, target, err)
		}
	}
	return nil
}
