package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Environment variables the process and end-to-end tests read.
const (
	// EnvBinDir names a directory of built binaries (make build's bin/);
	// without it tests build them.
	EnvBinDir = "SPLITLET_BIN_DIR"
	// EnvContainerd is containerd's CRI endpoint for the end-to-end tests
	// (make e2e starts a private containerd and sets it).
	EnvContainerd = "SPLITLET_CONTAINERD_ENDPOINT"
)

// Binaries returns EnvBinDir when set, or builds the stack's binaries into
// a temporary directory; cleanup removes what it built.
func Binaries(ctx context.Context) (dir string, cleanup func(), err error) {
	if dir := os.Getenv(EnvBinDir); dir != "" {
		return dir, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "splitlet-bin")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { _ = os.RemoveAll(tmp) }
	if _, err := Build(ctx, tmp); err != nil {
		cleanup()
		return "", nil, err
	}
	return tmp, cleanup, nil
}

// ForTestMain starts a stack for a test package's TestMain (see
// RunContainerdTests) with the
// binaries of Binaries and a fresh directory, and returns a stop function
// that, when the tests failed (code != 0), writes the end of each process's
// log to w before stopping.
func ForTestMain(ctx context.Context, cfg Config, w io.Writer) (*Stack, func(code int), error) {
	bin, cleanBin, err := Binaries(ctx)
	if err != nil {
		return nil, nil, err
	}
	cfg.BinDir = bin
	cleanDir := func() {}
	if cfg.Dir == "" {
		// Short: unix socket paths are limited to 108 bytes.
		dir, err := os.MkdirTemp("", "splitlet-e2e")
		if err != nil {
			cleanBin()
			return nil, nil, err
		}
		cfg.Dir, cleanDir = dir, func() { _ = os.RemoveAll(dir) }
	}
	s, err := Start(ctx, cfg)
	if err != nil {
		cleanDir()
		cleanBin()
		return nil, nil, err
	}
	return s, func(code int) {
		if code != 0 {
			for _, p := range s.Processes() {
				fmt.Fprintf(w, "---- %s log (last 100 lines) ----\n%s\n", p.Name, p.Tail(100))
			}
		}
		s.Stop()
		cleanDir()
		cleanBin()
	}, nil
}

// RunContainerdTests is the TestMain of an end-to-end package: when
// EnvContainerd names a containerd and no variable of ready is set (a stack
// the caller runs already), it starts cfg in front of that containerd
// (RuntimeEndpoint set here), hands the stack to use (to export its
// addresses), runs the tests and stops it, printing the processes' logs
// after a failure. Otherwise it only runs the tests, which skip saying why.
func RunContainerdTests(m *testing.M, cfg Config, use func(*Stack), ready ...string) int {
	endpoint := os.Getenv(EnvContainerd)
	if endpoint == "" {
		return m.Run()
	}
	for _, v := range ready {
		if os.Getenv(v) != "" {
			return m.Run()
		}
	}
	cfg.RuntimeEndpoint = endpoint
	s, stop, err := ForTestMain(context.Background(), cfg, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the stack:", err)
		return 1
	}
	use(s)
	code := m.Run()
	stop(code)
	return code
}

// ErrNoMetric is what Metric wraps when sync's /metrics has no such sample
// (yet: a counter with labels appears with its first increment).
var ErrNoMetric = errors.New("no such metric")

// Metric reads one sample from sync's /metrics: name is the metric's name
// and, for a labelled sample, its labels exactly as exposed.
func (s *Stack) Metric(name string) (float64, error) {
	raw, err := s.SyncGet("/metrics")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("%w: %s in sync's /metrics", ErrNoMetric, name)
}

// SyncGet reads one of sync's operational pages (/metrics, /healthz, and
// /debug/pprof/ when sync runs with --profiling); a status other than 200
// is an error carrying the page's start.
func (s *Stack) SyncGet(path string) ([]byte, error) {
	hc, base, err := s.syncHTTP()
	if err != nil {
		return nil, err
	}
	return getPage(hc, base+path)
}

// GatewayGet is SyncGet for the gateway's metrics server (GatewayMetricsAddr
// set: /metrics, and /debug/pprof/ with the gateway's --profiling).
func (s *Stack) GatewayGet(path string) ([]byte, error) {
	if s.GatewayMetricsAddr == "" {
		return nil, errors.New("the gateway serves no metrics: Config.GatewayMetricsAddr is empty")
	}
	return getPage(http.DefaultClient, "http://"+s.GatewayMetricsAddr+path)
}

func getPage(hc *http.Client, url string) ([]byte, error) {
	resp, err := hc.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %.200s", url, resp.Status, raw)
	}
	return raw, nil
}

// Resyncs is how many periodic resyncs sync's pod workers have made since
// sync (re)started: kubelet_pod_worker_duration_seconds with
// operation_type sync, 0 until the first.
func (s *Stack) Resyncs() (int, error) {
	v, err := s.Metric(`kubelet_pod_worker_duration_seconds_count{operation_type="sync"}`)
	if errors.Is(err, ErrNoMetric) {
		return 0, nil
	}
	return int(v), err
}

// WaitResyncs waits up to timeout until sync's pod workers have made n
// periodic resyncs more than when called: the evidence that sync had its
// chances to act (or to wrongly act) on the pods it runs, before a test
// checks that nothing changed.
func (s *Stack) WaitResyncs(t TB, n int, timeout time.Duration) {
	t.Helper()
	base, err := s.Resyncs()
	if err != nil {
		t.Fatalf("read sync's resyncs: %v", err)
	}
	WaitFor(t, timeout, fmt.Sprintf("%d pod worker resyncs", n), func() (bool, string) {
		got, err := s.Resyncs()
		if err != nil {
			return false, err.Error()
		}
		return got >= base+n, fmt.Sprintf("%d resyncs", got-base)
	})
}
