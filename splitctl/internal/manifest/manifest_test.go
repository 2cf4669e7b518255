package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a.yaml":       "kind: Pod\n",
		"b.yml":        "kind: Pod # b\n",
		"c.json":       `{"kind":"Pod"}`,
		"empty.yaml":   "  \n",
		"skip.txt":     "kind: Pod # txt\n",
		"sub/d.yaml":   "kind: Pod # d\n",
		"explicit.txt": "kind: Pod # explicit\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	emptyDir := t.TempDir()
	tests := []struct {
		desc      string
		sources   []string
		recursive bool
		stdin     string
		want      []string // sources, relative to dir
		wantErr   string
		wantIs    error
	}{
		{desc: "directory: manifest extensions only, empty files skipped", sources: []string{dir}, want: []string{"a.yaml", "b.yml", "c.json"}},
		{desc: "recursive directory", sources: []string{dir}, recursive: true, want: []string{"a.yaml", "b.yml", "c.json", "sub/d.yaml"}},
		{desc: "an explicit file whatever its extension", sources: []string{filepath.Join(dir, "explicit.txt")}, want: []string{"explicit.txt"}},
		{desc: "stdin and a file, in order", sources: []string{"-", filepath.Join(dir, "a.yaml")}, stdin: "kind: Pod\n", want: []string{"-", "a.yaml"}},
		{desc: "stdin twice", sources: []string{"-", "-"}, stdin: "kind: Pod\n", wantErr: `stdin ("-") can be given only once`},
		{desc: "missing path", sources: []string{filepath.Join(dir, "nope")}, wantErr: "does not exist"},
		{desc: "URL", sources: []string{"https://example.com/pod.yaml"}, wantErr: "URLs are not supported"},
		{desc: "nothing at all", sources: nil, wantErr: "must specify one of -f and -k"},
		{desc: "an empty directory has no objects", sources: []string{emptyDir}, wantIs: ErrNoObjects},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := Read(tc.sources, tc.recursive, strings.NewReader(tc.stdin))
			switch {
			case tc.wantIs != nil:
				if !errors.Is(err, tc.wantIs) {
					t.Fatalf("err = %v, want %v", err, tc.wantIs)
				}
				return
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			var srcs []string
			for _, m := range got {
				rel := m.Source
				if rel != "-" {
					rel, _ = filepath.Rel(dir, m.Source)
				}
				srcs = append(srcs, rel)
				if m.Source != "-" && m.Content != files[rel] {
					t.Errorf("%s content %q, want %q", rel, m.Content, files[rel])
				}
			}
			if strings.Join(srcs, ",") != strings.Join(tc.want, ",") {
				t.Errorf("sources %q, want %q", srcs, tc.want)
			}
		})
	}
}
