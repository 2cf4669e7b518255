package kubeletnode

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestKubeletConfiguration(t *testing.T) {
	l := newLayout("/n")
	cfg := Config{
		NodeIP: "192.0.2.10", Port: 10250, HealthzPort: 10248,
		RuntimeEndpoint: "unix:///c.sock", ClientCAFile: "/ca.crt",
		CgroupRoot: "/kubelet-a", ClusterDomain: "cluster.local",
		TLSCertFile: "/n/pki/kubelet.crt", TLSKeyFile: "/n/pki/kubelet.key",
	}
	path := filepath.Join(t.TempDir(), "c.json")
	if err := newKubeletConfiguration(cfg, l).write(path); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		desc  string
		field string
		want  any
	}{
		{"the kubelet's config kind", "kind", "KubeletConfiguration"},
		{"no systemd on the machine", "cgroupDriver", "cgroupfs"},
		{"QoS cgroups as on a real node", "cgroupsPerQOS", true},
		{"pods' cgroups apart from splitlet's /kubepods", "cgroupRoot", "/kubelet-a"},
		{"cgroup v1 allowed", "failCgroupV1", false},
		{"swap does not stop it", "failSwapOn", false},
		{"listens on the node IP", "address", "192.0.2.10"},
		{"no read-only port", "readOnlyPort", 0.0},
		{"healthz on loopback", "healthzBindAddress", "127.0.0.1"},
		{"serving certificate given", "tlsCertFile", "/n/pki/kubelet.crt"},
		{"webhook authorization", "authorization", map[string]any{"mode": "Webhook"}},
		{"pod logs under Dir", "podLogsDir", "/n/pod-logs"},
		{"image GC off", "imageGCHighThresholdPercent", 100.0},
		{"no staticPodPath", "staticPodPath", nil},
	} {
		if v := got[tc.field]; !reflect.DeepEqual(v, tc.want) {
			t.Errorf("%s: %s = %#v, want %#v", tc.desc, tc.field, v, tc.want)
		}
	}
	authn := got["authentication"].(map[string]any)
	want := map[string]any{
		"x509":      map[string]any{"clientCAFile": "/ca.crt"},
		"webhook":   map[string]any{"enabled": true},
		"anonymous": map[string]any{"enabled": false},
	}
	if !reflect.DeepEqual(authn, want) {
		t.Errorf("authentication = %v, want %v", authn, want)
	}
}

func TestCgroupHierarchies(t *testing.T) {
	for _, tc := range []struct {
		desc  string
		files []string // created below the root; a trailing / makes a directory
		links map[string]string
		want  []string
	}{
		{
			desc:  "cgroup v2: the root",
			files: []string{"cgroup.controllers", "user.slice/"},
			want:  []string{"."},
		},
		{
			desc:  "cgroup v1: one per controller, symlinks skipped",
			files: []string{"cpu,cpuacct/", "memory/", "pids/"},
			links: map[string]string{"cpu": "cpu,cpuacct", "cpuacct": "cpu,cpuacct"},
			want:  []string{"cpu,cpuacct", "memory", "pids"},
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			root := t.TempDir()
			for _, f := range tc.files {
				p := filepath.Join(root, f)
				var err error
				if f[len(f)-1] == '/' {
					err = os.MkdirAll(p, 0o755)
				} else {
					err = os.WriteFile(p, nil, 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			for name, dest := range tc.links {
				if err := os.Symlink(dest, filepath.Join(root, name)); err != nil {
					t.Fatal(err)
				}
			}
			got, err := cgroupHierarchies(root)
			if err != nil {
				t.Fatal(err)
			}
			var rel []string
			for _, h := range got {
				r, _ := filepath.Rel(root, h)
				rel = append(rel, r)
			}
			if !reflect.DeepEqual(rel, tc.want) {
				t.Errorf("got %v, want %v", rel, tc.want)
			}
		})
	}
}

func TestRemoveLogLinks(t *testing.T) {
	dir := t.TempDir()
	links := filepath.Join(dir, "containers")
	if err := os.Mkdir(links, 0o755); err != nil {
		t.Fatal(err)
	}
	ours, theirs := filepath.Join(dir, "a", "pod-logs"), filepath.Join(dir, "b", "pod-logs")
	for name, dest := range map[string]string{
		"ours.log":   ours + "/ns_pod_uid/c/0.log",
		"theirs.log": theirs + "/ns_pod_uid/c/0.log",
		"prefix.log": ours + "-other/x/0.log",
	} {
		if err := os.Symlink(dest, filepath.Join(links, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := removeLogLinks(links, ours); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(links)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if want := []string{"prefix.log", "theirs.log"}; !reflect.DeepEqual(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
	if err := removeLogLinks(filepath.Join(dir, "missing"), ours); err != nil {
		t.Errorf("missing directory: %v", err)
	}
}

func TestUnescapeMountPath(t *testing.T) {
	if got := unescapeMountPath(`/tmp/a\040b/c\134d`); got != `/tmp/a b/c\d` {
		t.Errorf("got %q", got)
	}
}

func TestRestoreTunables(t *testing.T) {
	root := t.TempDir()
	for _, name := range kernelTunables {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte("0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	saved, err := readTunables(root)
	if err != nil {
		t.Fatal(err)
	}
	// What the kubelet does at start.
	if err := os.WriteFile(filepath.Join(root, "kernel/panic"), []byte("10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := restoreTunables(root, saved); err != nil {
		t.Fatal(err)
	}
	got, err := readTunables(root)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, saved) {
		t.Errorf("after restore %v, want %v", got, saved)
	}
}
