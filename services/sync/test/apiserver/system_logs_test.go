package apiserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSystemLogsThroughAPIServer: `kubectl get --raw
// /api/v1/nodes/<node>/proxy/logs/...`, as against a kubelet, reaches sync's
// /logs/ through the API server: the log directory's listing, one of its
// files, and node log queries (--enable-system-log-query) for a service
// logging to <service>.log and for a file.
func TestSystemLogsThroughAPIServer(t *testing.T) {
	pki, ip := os.Getenv(pkiEnv), os.Getenv(nodeIPEnv)
	if pki == "" || ip == "" {
		t.Skipf("needs %s (hack/apiserver.sh env) and %s (a non-loopback address of this machine, which hack/apiserver-e2e.sh sets up): "+
			"the API server does not proxy nodes/proxy to loopback", pkiEnv, nodeIPEnv)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "nested"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"boot.log": "booted\n", "nested/disk.log": "disk ok\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	admin, _ := kubeClient(t)
	_, _, node, _ := nodeAPIStackAt(t, pki, "", ip, "--system-log-dir="+dir, "--enable-system-log-query")

	for _, tc := range []struct {
		desc, path, query, want string
	}{
		{desc: "the directory's listing", path: "logs/", want: `<a href="boot.log">boot.log</a>`},
		{desc: "a file", path: "logs/nested/disk.log", want: "disk ok\n"},
		{desc: "a service logging to a file", path: "logs/", query: "boot", want: "booted\n"},
		{desc: "a file query", path: "logs/", query: "nested/disk.log", want: "disk ok\n"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			// One segment: AbsPath keeps its trailing slash only then.
			req := admin.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/" + node + "/proxy/" + tc.path)
			if tc.query != "" {
				req = req.Param("query", tc.query)
			}
			raw, err := req.DoRaw(t.Context())
			if err != nil || !strings.Contains(string(raw), tc.want) {
				t.Errorf("GET %s?query=%s through the API server: %q, %v; want %q", tc.path, tc.query, raw, err, tc.want)
			}
		})
	}
	// A malformed query is refused by sync, and the API server passes the
	// refusal on.
	if raw, err := admin.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/"+node+"/proxy/logs/").
		Param("query", "../etc/passwd").DoRaw(t.Context()); err == nil {
		t.Errorf("a query climbing out of the log directory: %q, want an error", raw)
	}
}
