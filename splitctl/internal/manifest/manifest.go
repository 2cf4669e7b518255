// Package manifest reads what `splitctl apply -f` is given — files,
// directories and stdin, each holding one or several YAML or JSON documents —
// into manifests to send to the PodService unchanged. The server decodes and
// validates; splitctl only gathers, as kubectl's resource builder does for -f.
package manifest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// ErrNoObjects is returned when the sources hold nothing to apply.
var ErrNoObjects = errors.New("no objects passed to apply")

// Manifest is the content of one source.
type Manifest struct {
	// Source is the file path, or "-" for stdin.
	Source  string
	Content string
}

// extensions are the file types kubectl's builder picks from a directory
// (FileExtensions in k8s.io/cli-runtime/pkg/resource/builder.go).
var extensions = []string{".json", ".yaml", ".yml"}

// Read reads every source in order. A directory contributes its files with
// a manifest extension, sorted by name; recursive descends into
// subdirectories as kubectl's -R does. "-" reads stdin (once). A file named
// explicitly is read whatever its extension, as kubectl does.
func Read(sources []string, recursive bool, stdin io.Reader) ([]Manifest, error) {
	if len(sources) == 0 {
		return nil, errors.New("must specify one of -f and -k")
	}
	var out []Manifest
	readStdin := false
	for _, src := range sources {
		if src == "-" {
			if readStdin {
				return nil, errors.New("stdin (\"-\") can be given only once")
			}
			readStdin = true
			b, err := io.ReadAll(stdin)
			if err != nil {
				return nil, fmt.Errorf("reading stdin: %w", err)
			}
			out = appendManifest(out, "-", string(b))
			continue
		}
		if strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://") {
			return nil, fmt.Errorf("reading %s: URLs are not supported by splitctl", src)
		}
		fi, err := os.Stat(src)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("the path %q does not exist", src)
		}
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			b, err := os.ReadFile(src)
			if err != nil {
				return nil, err
			}
			out = appendManifest(out, src, string(b))
			continue
		}
		files, err := dirFiles(src, recursive)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			out = appendManifest(out, f, string(b))
		}
	}
	if len(out) == 0 {
		return nil, ErrNoObjects
	}
	return out, nil
}

// appendManifest skips sources that are only whitespace, so an empty file in
// a directory is not sent as an (invalid) empty manifest.
func appendManifest(out []Manifest, src, content string) []Manifest {
	if strings.TrimSpace(content) == "" {
		return out
	}
	return append(out, Manifest{Source: src, Content: content})
}

func dirFiles(dir string, recursive bool) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && !recursive {
				return filepath.SkipDir
			}
			return nil
		}
		for _, ext := range extensions {
			if strings.HasSuffix(path, ext) {
				files = append(files, path)
				break
			}
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}
