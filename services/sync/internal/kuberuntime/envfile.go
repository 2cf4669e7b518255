package kuberuntime

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/containerd/errdefs"
	securejoin "github.com/cyphar/filepath-securejoin"
	v1 "k8s.io/api/core/v1"
)

// Env files (EnvFiles, Beta and on by default since v1.35): an env var's
// valueFrom.fileKeyRef names a file in one of the pod's emptyDir volumes,
// typically written by an init container, and a key in it. The file is
// read on the node when the container is created.

// podVolumeDirs returns the host directory of each of the pod's emptyDir
// volumes, by volume name: the volumes a fileKeyRef may name (the API
// server refuses any other kind). It stands in for the kubelet's
// podVolumes, the volume manager's mounted volumes, of which the fileKeyRef
// case of makeEnvironmentVariables uses only the host path. A directory no
// container mounted yet does not exist; reading a file from it then fails
// as reading a missing file from an existing volume does on the kubelet.
func podVolumeDirs(pod *v1.Pod, opts ContainerOptions) map[string]string {
	dirs := map[string]string{}
	for i := range pod.Spec.Volumes {
		if vol := &pod.Spec.Volumes[i]; vol.EmptyDir != nil {
			dirs[vol.Name] = emptyDirHostPath(pod, vol.Name, opts)
		}
	}
	return dirs
}

// fileKeyRefValue resolves a valueFrom.fileKeyRef: ref.Key of the env file
// at ref.Path inside the volume ref.VolumeName, whose host directory
// podVolumes gives. skip reports a key that is missing, or set to the empty
// string, in a file of an optional reference: the variable is then left
// out. Matches the FileKeyRef case of the kubelet's
// makeEnvironmentVariables:
//   - the volume must be one of podVolumes: "cannot find the volume %q
//     referenced by FileKeyRef";
//   - the path is joined to the volume's directory with
//     securejoin.SecureJoin, as the kubelet does, so symbolic links in the
//     volume are resolved with the volume as their root;
//   - the file is parsed by parseEnv; a file that is missing or cannot be
//     parsed is an error even when the reference is optional;
//   - an empty value counts as a missing key: skipped when optional, else
//     "environment variable key %q not found in file %q".
//
// Differences from the kubelet, on purpose: a path with a ".." element is
// refused, as the API server's validation does (validatePathNoBacksteps),
// because static pods are not validated by it; the file is opened through
// an os.Root of the volume's directory, so that a symbolic link a container
// swaps in after the join cannot lead out of the volume; and the parse
// error says what is wrong and where, where the kubelet only logs it and
// reports "couldn't parse env file".
func fileKeyRefValue(ref *v1.FileKeySelector, podVolumes map[string]string) (value string, skip bool, _ error) {
	dir, ok := podVolumes[ref.VolumeName]
	if !ok {
		return "", false, withKind(errdefs.ErrInvalidArgument, fmt.Errorf("cannot find the volume %q referenced by FileKeyRef", ref.VolumeName))
	}
	if slices.Contains(strings.Split(filepath.ToSlash(ref.Path), "/"), "..") {
		return "", false, withKind(errdefs.ErrInvalidArgument, fmt.Errorf("path %q must not contain '..'", ref.Path))
	}
	dir = filepath.Clean(dir)
	path, err := securejoin.SecureJoin(dir, ref.Path)
	if err != nil {
		return "", false, err
	}
	value, err = parseEnvInRoot(dir, path, ref.Key)
	if err != nil {
		return "", false, fmt.Errorf("couldn't parse env file: %w", err)
	}
	if value == "" {
		if isOptional(ref.Optional) {
			return "", true, nil
		}
		return "", false, withKind(errdefs.ErrNotFound, fmt.Errorf("environment variable key %q not found in file %q", ref.Key, path))
	}
	return value, false, nil
}

// parseEnvInRoot is parseEnv for the file at path, which lies inside dir,
// opened without following any link out of dir.
func parseEnvInRoot(dir, path, key string) (string, error) {
	rel, err := filepath.Rel(dir, path)
	if err != nil {
		return "", err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", openEnvFileError(path, err)
	}
	defer func() { _ = root.Close() }()
	f, err := root.Open(rel)
	if err != nil {
		return "", openEnvFileError(path, err)
	}
	defer func() { _ = f.Close() }()
	return parseEnv(f, path, key)
}

func openEnvFileError(path string, err error) error {
	err = fmt.Errorf("failed to open environment variable file %q: %w", path, err)
	if errors.Is(err, fs.ErrNotExist) {
		return withKind(errdefs.ErrNotFound, err)
	}
	return err
}

// kindError is an error with the kubelet's message as it is, that also
// matches the errdefs sentinel kind for errors.Is.
type kindError struct {
	err  error
	kind error
}

func withKind(kind, err error) error { return kindError{err: err, kind: kind} }

func (e kindError) Error() string   { return e.err.Error() }
func (e kindError) Unwrap() []error { return []error{e.err, e.kind} }

// parseEnv returns the value of key in the env file r (read from path, for
// messages), or "" when the key is not there. Matches the kubelet's
// envutil.ParseEnv (pkg/kubelet/util/env), a strict subset of POSIX shell:
//   - a line is NAME='value', after optional blanks (spaces and tabs); lines
//     that are blank, or whose first non-blank character is '#', are skipped;
//   - the value is quoted in single quotes and taken literally (no escapes,
//     no expansion); it may span lines, joined with "\n"; after the closing
//     quote only blanks and a '#' comment may follow;
//   - no blank may come before '='; "NAME= 'x'" sets NAME to "" (as a shell
//     would) and the rest of that line is ignored;
//   - the first line setting key decides: later lines are not read, so a
//     malformed line after it is no error;
//   - lines end in "\n" or "\r\n" and are at most bufio.MaxScanTokenSize
//     (64 KiB) long; a longer line is an error once it is reached. The file
//     as a whole has no size limit.
//
// Errors name the line: "invalid environment variable format at line N: ...".
func parseEnv(r io.Reader, path, key string) (string, error) {
	lines := bufio.NewScanner(r)
	lineNum := 0
	next := func() (string, bool) {
		if !lines.Scan() {
			return "", false
		}
		lineNum++
		return lines.Text(), true
	}
	formatErr := func(format string, args ...any) error {
		return withKind(errdefs.ErrInvalidArgument, fmt.Errorf("invalid environment variable format "+format, args...))
	}
	for {
		line, ok := next()
		if !ok {
			break
		}
		line = strings.TrimLeft(line, " \t")
		if line == "" || line[0] == '#' {
			continue
		}
		name, value, found := strings.Cut(line, "=")
		switch {
		case !found:
			return "", formatErr("at line %d: missing '='", lineNum)
		case name == "":
			return "", formatErr("at line %d: empty variable name", lineNum)
		case strings.TrimRight(name, " \t") != name:
			return "", formatErr("at line %d: whitespace before '=' is not allowed", lineNum)
		case value != "" && (value[0] == ' ' || value[0] == '\t'):
			if name == key {
				return "", nil
			}
			continue
		case !strings.HasPrefix(value, "'"):
			return "", formatErr("at line %d: value must be enclosed in single quotes", lineNum)
		}

		first := lineNum
		var quoted strings.Builder
		rest := value[1:]
		for {
			inside, after, closed := strings.Cut(rest, "'")
			quoted.WriteString(inside)
			if closed {
				if after = strings.TrimLeft(after, " \t"); after != "" && after[0] != '#' {
					return "", formatErr("at line %d: unexpected content after closing quote", lineNum)
				}
				break
			}
			quoted.WriteByte('\n')
			if rest, ok = next(); !ok {
				return "", formatErr("starting at line %d: unclosed single quote", first)
			}
		}
		if name == key {
			return quoted.String(), nil
		}
	}
	if err := lines.Err(); err != nil {
		return "", fmt.Errorf("error reading environment variable file %q: %w", path, err)
	}
	return "", nil
}
