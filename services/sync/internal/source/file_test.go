package source

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFileSourceRead(t *testing.T) {
	for _, tc := range []struct {
		desc        string
		files       map[string]string
		wantPods    []string
		wantInvalid []string
	}{
		{
			desc: "several documents in one file",
			files: map[string]string{"a.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: one}\nspec:\n  containers: [{name: c, image: i}]\n" +
				"---\napiVersion: v1\nkind: Pod\nmetadata: {name: two}\nspec:\n  containers: [{name: c, image: i}]\n"},
			wantPods: []string{"one-node1", "two-node1"},
		},
		{
			desc: "an invalid file is reported and skipped, the others still count",
			files: map[string]string{
				"bad.yaml":  "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec:\n  containers: [{name: c}]\n",
				"good.json": `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"good"},"spec":{"containers":[{"name":"c","image":"i"}]}}`,
			},
			wantPods:    []string{"good-node1"},
			wantInvalid: []string{"bad.yaml"},
		},
		{
			desc:     "dot files are ignored",
			files:    map[string]string{".swp": "garbage"},
			wantPods: nil,
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var invalid []string
			f := NewFileSource(dir, "node1", 0, NewPodConfig(FileSourceName), func(path string, err error) {
				invalid = append(invalid, filepath.Base(path))
				if !strings.Contains(err.Error(), "spec.containers[0].image") {
					t.Errorf("invalid file error %q does not name the field", err)
				}
			})
			pods := f.read(context.Background())
			var names []string
			for _, p := range pods {
				names = append(names, p.Name)
				if p.UID == "" || p.Spec.NodeName != "node1" {
					t.Errorf("pod %s: uid %q node %q, want a content UID and node1", p.Name, p.UID, p.Spec.NodeName)
				}
			}
			if strings.Join(names, ",") != strings.Join(tc.wantPods, ",") {
				t.Errorf("pods = %v, want %v", names, tc.wantPods)
			}
			if strings.Join(invalid, ",") != strings.Join(tc.wantInvalid, ",") {
				t.Errorf("reported invalid = %v, want %v", invalid, tc.wantInvalid)
			}
			// A second read reports an unchanged invalid file no more.
			invalid = nil
			f.read(context.Background())
			if len(invalid) != 0 {
				t.Errorf("invalid file reported again on an unchanged re-read: %v", invalid)
			}
		})
	}
}

// A new manifest is seen through inotify long before the next poll.
func TestFileSourceWatches(t *testing.T) {
	dir := t.TempDir()
	cfg := NewPodConfig(FileSourceName)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go NewFileSource(dir, "node1", time.Hour, cfg, nil).Run(ctx)
	// Run adds the watch before its first read and Set, and only Set marks
	// the source seen: once it is, the directory is watched, and a file
	// written now was not in that first read.
	deadline := time.After(5 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cfg.SeenAllSources() {
		select {
		case <-deadline:
			t.Fatal("the file source never made its first read")
		case <-tick.C:
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "p.yaml"),
		[]byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: i}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case u := <-cfg.Updates():
		if u.Op != ADD || len(u.Pods) != 1 || u.Pods[0].Name != "p-node1" {
			t.Errorf("update = %v %d pods, want ADD of p-node1", u.Op, len(u.Pods))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no update within 5 s although the poll period is an hour: the directory is not watched")
	}
}

// PreventStaticPodAPIReferences: a static pod referencing an API object is
// refused at the source, as the kubelet's tryDecodeSinglePod does, with its
// message and the field; the other files still count.
func TestFileSourceRefusesAPIReferences(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"secret.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: s}\nspec:\n  containers: [{name: c, image: i}]\n" +
			"  volumes: [{name: v, secret: {secretName: creds}}]\n",
		"token.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: t}\nspec:\n  containers: [{name: c, image: i}]\n" +
			"  volumes: [{name: v, projected: {sources: [{serviceAccountToken: {path: token}}]}}]\n",
		"ok.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: ok}\nspec:\n  containers: [{name: c, image: i}]\n" +
			"  volumes: [{name: v, downwardAPI: {items: [{path: name, fieldRef: {fieldPath: metadata.name}}]}}]\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	invalid := map[string]string{}
	f := NewFileSource(dir, "node1", 0, NewPodConfig(FileSourceName), func(path string, err error) {
		invalid[filepath.Base(path)] = err.Error()
	})
	pods := f.read(context.Background())
	if len(pods) != 1 || pods[0].Name != "ok-node1" {
		t.Errorf("pods = %v, want only ok-node1", pods)
	}
	for file, want := range map[string]string{
		"secret.yaml": "spec.volumes[0].secret.secretName: Forbidden: static pods may not reference secrets",
		"token.yaml":  "spec.volumes[0].projected.sources[0].serviceAccountToken: Forbidden: static pods may not reference serviceaccounts (via projected volumes)",
	} {
		if !strings.Contains(invalid[file], want) {
			t.Errorf("%s reported %q, want it to contain %q", file, invalid[file], want)
		}
	}
	if len(invalid) != 2 {
		t.Errorf("reported %v, want secret.yaml and token.yaml", invalid)
	}
}
