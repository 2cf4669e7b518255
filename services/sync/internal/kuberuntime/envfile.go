package kuberuntime

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/containerd/errdefs"
)

// Env files (EnvFiles, Beta and on by default since v1.35): an env var's
// valueFrom.fileKeyRef names a file in one of the pod's emptyDir volumes,
// typically written by an init container, and a key in it. The file is
// read on the node when the container is created.

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
