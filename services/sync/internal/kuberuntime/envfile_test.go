package kuberuntime

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

// The cases follow the kubelet's pkg/kubelet/util/env TestParseEnv rules.
func TestParseEnv(t *testing.T) {
	cases := []struct {
		desc    string
		content string
		key     string
		want    string
		wantErr string
	}{
		{desc: "simple value", content: "KEY='value'\n", key: "KEY", want: "value"},
		{desc: "other keys around", content: "A='a'\nKEY='v'\nB='b'\n", key: "KEY", want: "v"},
		{desc: "key absent", content: "A='a'\n", key: "KEY", want: ""},
		{desc: "empty file", content: "", key: "KEY", want: ""},
		{desc: "no newline at the end", content: "KEY='v'", key: "KEY", want: "v"},
		{desc: "blank lines, comments and leading blanks skipped", content: "\n  \t\n# KEY='no'\n   # c\n \tKEY='v'\n", key: "KEY", want: "v"},
		{desc: "literal content: no escapes, no expansion", content: `KEY='a\n $HOME "q" $(X)'` + "\n", key: "KEY", want: `a\n $HOME "q" $(X)`},
		{desc: "value may hold '=' and '#'", content: "KEY='a=b # c'\n", key: "KEY", want: "a=b # c"},
		{desc: "comment after the closing quote", content: "KEY='v'   # note\n", key: "KEY", want: "v"},
		{desc: "blanks after the closing quote", content: "KEY='v' \t\n", key: "KEY", want: "v"},
		{desc: "multi-line value", content: "KEY='line1\n  line2\nline3'\nB='b'\n", key: "KEY", want: "line1\n  line2\nline3"},
		{desc: "multi-line value of another key skipped", content: "A='x\nKEY=not-a-line'\nKEY='v'\n", key: "KEY", want: "v"},
		{desc: "CRLF line ends", content: "A='a'\r\nKEY='v'\r\n", key: "KEY", want: "v"},
		{desc: "blank after '=': empty value", content: "KEY= 'v'\n", key: "KEY", want: ""},
		{desc: "blank after '=' of another key: rest of line ignored", content: "A= 'x\nKEY='v'\n", key: "KEY", want: "v"},
		{desc: "first occurrence wins", content: "KEY='first'\nKEY='second'\n", key: "KEY", want: "first"},
		{desc: "lines after the key are not read", content: "KEY='v'\nnot valid\n", key: "KEY", want: "v"},
		{desc: "empty quoted value", content: "KEY=''\n", key: "KEY", want: ""},
		{desc: "name is matched whole", content: "KEY2='no'\nKEY='v'\n", key: "KEY", want: "v"},

		{desc: "missing '='", content: "A='a'\nKEY\n", key: "KEY", wantErr: "invalid environment variable format at line 2: missing '='"},
		{desc: "empty name", content: "='v'\n", key: "KEY", wantErr: "at line 1: empty variable name"},
		{desc: "blank before '='", content: "KEY ='v'\n", key: "KEY", wantErr: "at line 1: whitespace before '=' is not allowed"},
		{desc: "unquoted value", content: "KEY=value\n", key: "KEY", wantErr: "at line 1: value must be enclosed in single quotes"},
		{desc: "double quotes", content: `KEY="value"` + "\n", key: "KEY", wantErr: "at line 1: value must be enclosed in single quotes"},
		{desc: "nothing after '='", content: "KEY=\n", key: "KEY", wantErr: "at line 1: value must be enclosed in single quotes"},
		{desc: "content after the closing quote", content: "KEY='v' x\n", key: "KEY", wantErr: "at line 1: unexpected content after closing quote"},
		{desc: "content after a multi-line value names its last line", content: "KEY='a\nb' x\n", key: "KEY", wantErr: "at line 2: unexpected content after closing quote"},
		{desc: "unclosed quote names its first line", content: "A='a'\nKEY='v\nmore\n", key: "KEY", wantErr: "starting at line 2: unclosed single quote"},
		{desc: "malformed line before the key", content: "oops\nKEY='v'\n", key: "KEY", wantErr: "at line 1: missing '='"},
		{desc: "line longer than 64 KiB", content: "A='" + strings.Repeat("x", 70<<10) + "'\nKEY='v'\n", key: "KEY", wantErr: "token too long"},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := parseEnv(strings.NewReader(tc.content), "/vol/env", tc.key)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseEnv: %v", err)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func fileKeyEnv(name, volume, path, key string, optional *bool) v1.EnvVar {
	return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{
		VolumeName: volume, Path: path, Key: key, Optional: optional,
	}}}
}

// envFileVolume makes a volume directory holding the given files and
// returns podVolumes naming it "config".
func envFileVolume(t *testing.T, files map[string]string) (dir string, podVolumes map[string]string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "config")
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, map[string]string{"config": dir}
}

func TestMakeEnvironmentVariablesFileKeyRef(t *testing.T) {
	_, podVolumes := envFileVolume(t, map[string]string{
		"app.env":     "DB_HOST='db.local'\nDB_PORT='5432'\nEMPTY=''\n",
		"sub/dir.env": "NESTED='deep'\n",
	})
	cases := []struct {
		desc string
		env  []v1.EnvVar
		want []EnvVar
	}{
		{
			desc: "values read, in declaration order, and usable by later literals",
			env: []v1.EnvVar{
				fileKeyEnv("HOST", "config", "app.env", "DB_HOST", nil),
				{Name: "URL", Value: "postgres://$(HOST):$(PORT)"},
				fileKeyEnv("PORT", "config", "app.env", "DB_PORT", new(false)),
				fileKeyEnv("NESTED", "config", "sub/dir.env", "NESTED", nil),
			},
			want: []EnvVar{{"HOST", "db.local"}, {"URL", "postgres://db.local:$(PORT)"}, {"PORT", "5432"}, {"NESTED", "deep"}},
		},
		{
			desc: "an absolute path is read inside the volume",
			env:  []v1.EnvVar{fileKeyEnv("HOST", "config", "/app.env", "DB_HOST", nil)},
			want: []EnvVar{{"HOST", "db.local"}},
		},
		{
			desc: "optional: a missing key is skipped",
			env:  []v1.EnvVar{{Name: "KEPT", Value: "yes"}, fileKeyEnv("NOPE", "config", "app.env", "MISSING", new(true))},
			want: []EnvVar{{"KEPT", "yes"}},
		},
		{
			desc: "optional: an empty value counts as missing",
			env:  []v1.EnvVar{fileKeyEnv("E", "config", "app.env", "EMPTY", new(true))},
			want: []EnvVar{},
		},
		{
			desc: "a skipped optional key leaves an earlier value of the name",
			env:  []v1.EnvVar{{Name: "X", Value: "before"}, fileKeyEnv("X", "config", "app.env", "MISSING", new(true))},
			want: []EnvVar{{"X", "before"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			pod := envPod()
			c := &pod.Spec.Containers[1]
			c.Env = tc.env
			got, err := makeEnvironmentVariables(t.Context(), pod, c, nil, podVolumes, EnvOptions{})
			if err != nil {
				t.Fatalf("makeEnvironmentVariables: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestMakeEnvironmentVariablesFileKeyRefErrors(t *testing.T) {
	dir, podVolumes := envFileVolume(t, map[string]string{
		"app.env": "DB_HOST='db.local'\nEMPTY=''\n",
		"bad.env": "A='a'\nB=unquoted\n",
	})
	// Outside the volume, a file a link might lead to.
	outside := filepath.Join(filepath.Dir(dir), "outside.env")
	if err := os.WriteFile(outside, []byte("SECRET='stolen'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "abs-link.env")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../outside.env", filepath.Join(dir, "rel-link.env")); err != nil {
		t.Fatal(err)
	}
	const field = "spec.containers[1].env[0].valueFrom.fileKeyRef (VAR): "
	cases := []struct {
		desc    string
		ref     v1.EnvVar
		wantIs  error
		wantMsg string
	}{
		{
			desc:    "required key missing",
			ref:     fileKeyEnv("VAR", "config", "app.env", "MISSING", nil),
			wantIs:  errdefs.ErrNotFound,
			wantMsg: field + `environment variable key "MISSING" not found in file "` + filepath.Join(dir, "app.env") + `"`,
		},
		{
			desc:    "required key with an empty value",
			ref:     fileKeyEnv("VAR", "config", "app.env", "EMPTY", new(false)),
			wantIs:  errdefs.ErrNotFound,
			wantMsg: field + `environment variable key "EMPTY" not found in file`,
		},
		{
			desc:    "file missing",
			ref:     fileKeyEnv("VAR", "config", "nope.env", "DB_HOST", nil),
			wantIs:  errdefs.ErrNotFound,
			wantMsg: field + `couldn't parse env file: failed to open environment variable file "` + filepath.Join(dir, "nope.env") + `"`,
		},
		{
			desc:    "file missing fails an optional reference too",
			ref:     fileKeyEnv("VAR", "config", "nope.env", "DB_HOST", new(true)),
			wantIs:  errdefs.ErrNotFound,
			wantMsg: field + "couldn't parse env file: failed to open environment variable file",
		},
		{
			desc:    "malformed file",
			ref:     fileKeyEnv("VAR", "config", "bad.env", "C", new(true)),
			wantIs:  errdefs.ErrInvalidArgument,
			wantMsg: field + "couldn't parse env file: invalid environment variable format at line 2: value must be enclosed in single quotes",
		},
		{
			desc:    "the path is a directory",
			ref:     fileKeyEnv("VAR", "config", "", "DB_HOST", nil),
			wantMsg: field + "couldn't parse env file: error reading environment variable file",
		},
		{
			desc:    "volume not in the pod",
			ref:     fileKeyEnv("VAR", "other", "app.env", "DB_HOST", nil),
			wantIs:  errdefs.ErrInvalidArgument,
			wantMsg: field + `cannot find the volume "other" referenced by FileKeyRef`,
		},
		{
			desc:    "a path leading out of the volume is refused",
			ref:     fileKeyEnv("VAR", "config", "../outside.env", "SECRET", nil),
			wantIs:  errdefs.ErrInvalidArgument,
			wantMsg: field + `path "../outside.env" must not contain '..'`,
		},
		{
			desc:    "'..' inside the path is refused too",
			ref:     fileKeyEnv("VAR", "config", "sub/../../outside.env", "SECRET", new(true)),
			wantIs:  errdefs.ErrInvalidArgument,
			wantMsg: "must not contain '..'",
		},
		{
			desc:    "an absolute link is resolved inside the volume",
			ref:     fileKeyEnv("VAR", "config", "abs-link.env", "SECRET", nil),
			wantIs:  errdefs.ErrNotFound,
			wantMsg: `failed to open environment variable file "` + filepath.Join(dir, outside) + `"`,
		},
		{
			desc:    "a relative link cannot climb out of the volume",
			ref:     fileKeyEnv("VAR", "config", "rel-link.env", "SECRET", nil),
			wantIs:  errdefs.ErrNotFound,
			wantMsg: `failed to open environment variable file "` + filepath.Join(dir, "outside.env") + `"`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			pod := envPod()
			c := &pod.Spec.Containers[1]
			c.Env = []v1.EnvVar{tc.ref}
			got, err := makeEnvironmentVariables(t.Context(), pod, c, nil, podVolumes, EnvOptions{})
			if err == nil {
				t.Fatalf("want an error, got %q", got)
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("error %v is not %v", err, tc.wantIs)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q\ndoes not say %q", err, tc.wantMsg)
			}
			if strings.Contains(err.Error(), "stolen") {
				t.Errorf("error %q shows a value from outside the volume", err)
			}
		})
	}
}

// A link a container swaps in after the join still cannot lead out of the
// volume: the file is opened through an os.Root of the volume.
func TestParseEnvInRootRefusesEscapingLink(t *testing.T) {
	dir, _ := envFileVolume(t, nil)
	outside := filepath.Join(filepath.Dir(dir), "outside.env")
	if err := os.WriteFile(outside, []byte("SECRET='stolen'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "app.env")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	got, err := parseEnvInRoot(dir, link, "SECRET")
	if err == nil || got != "" {
		t.Fatalf("got %q, %v; want an error", got, err)
	}
}

// generateContainerConfig reads the env file from the pod's emptyDir
// directory under PodVolumesRoot, where an init container wrote it.
func TestGenerateContainerConfigFileKeyRef(t *testing.T) {
	pod := makeTestPod()
	pod.Spec.Volumes = []v1.Volume{
		{Name: "config", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/etc"}}},
	}
	c := &pod.Spec.Containers[0]
	root := t.TempDir()
	opts := ContainerOptions{
		PodLogsRoot:           filepath.Join(root, "logs"),
		PodVolumesRoot:        filepath.Join(root, "pods"),
		PodContainersRoot:     filepath.Join(root, "pods"),
		FS:                    OSFS{},
		MachineMemoryCapacity: 10 * gi,
	}
	dir := filepath.Join(root, "pods", "uid-1", "volumes", "kubernetes.io~empty-dir", "config")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "app.env"), []byte("GREETING='hello'\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	c.Env = []v1.EnvVar{fileKeyEnv("GREETING", "config", "app.env", "GREETING", nil)}
	cfg := generate(t, pod, c, 0, opts)
	if got := cfg.GetEnvs(); len(got) != 1 || got[0].GetKey() != "GREETING" || string(got[0].GetValue()) != "hello" {
		t.Errorf("envs = %v, want GREETING=hello", got)
	}

	// Only emptyDir volumes hold env files, as the API server requires.
	c.Env = []v1.EnvVar{fileKeyEnv("PASSWD", "host", "passwd", "root", nil)}
	if _, err := generateContainerConfig(t.Context(), pod, c, 0, []string{testPodIP}, "sha256:abc", opts); err == nil ||
		!strings.Contains(err.Error(), `cannot find the volume "host" referenced by FileKeyRef`) {
		t.Errorf("error %v, want the volume not found", err)
	}
}

// A required key the file lacks keeps the container waiting in
// CreateContainerConfigError with the message, as on the kubelet.
func TestSyncPodFileKeyRefMissingKey(t *testing.T) {
	cri := &mutationRecorder{}
	dir := t.TempDir()
	m := NewManager(cri, cri, ManagerOptions{
		Sandbox:   SandboxOptions{PodLogsRoot: dir},
		Container: ContainerOptions{PodLogsRoot: dir, PodContainersRoot: dir, PodVolumesRoot: dir},
	})
	pod := makeTestPod()
	pod.Spec.Containers = pod.Spec.Containers[:1]
	pod.Spec.Volumes = []v1.Volume{{Name: "config", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	pod.Spec.Containers[0].Env = []v1.EnvVar{fileKeyEnv("DB", "config", "app.env", "DB", nil)}
	volDir := filepath.Join(dir, "uid-1", "volumes", "kubernetes.io~empty-dir", "config")
	if err := os.MkdirAll(volDir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(volDir, "app.env"), []byte("OTHER='x'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _ = m.SyncPod(context.Background(), pod, &container.PodStatus{ID: pod.UID}, &fakeProbes{}, false)
	w, ok := m.ContainerWaiting(pod.UID, "foo1")
	if !ok || w.Reason != ReasonCreateContainerConfigError {
		t.Fatalf("waiting = %+v (%v), want %s", w, ok, ReasonCreateContainerConfigError)
	}
	want := `spec.containers[0].env[0].valueFrom.fileKeyRef (DB): environment variable key "DB" not found in file "` + filepath.Join(volDir, "app.env") + `"`
	if !strings.Contains(w.Message, want) {
		t.Errorf("message %q\ndoes not say %q", w.Message, want)
	}
}
