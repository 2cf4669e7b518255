package main

import (
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// repeated is a flag that may be given several times.
type repeated []string

func (r *repeated) String() string { return strings.Join(*r, ",") }

func (r *repeated) Set(v string) error {
	*r = append(*r, v)
	return nil
}

// parseList reads an entrypoint or command: a JSON array when it starts with
// "[", as in a Dockerfile's exec form, otherwise a comma-separated list.
func parseList(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	if strings.HasPrefix(s, "[") {
		var list []string
		if err := json.Unmarshal([]byte(s), &list); err != nil {
			return nil, fmt.Errorf("not a JSON array of strings: %w", err)
		}
		return list, nil
	}
	return strings.Split(s, ","), nil
}

// fileCopy is one -file SRC:DST[:MODE].
type fileCopy struct {
	Src  string // path on this machine
	Dst  string // absolute path in the image
	Mode int64  // permission bits in the image, setuid/setgid/sticky included; 0: the source's
}

func parseFileFlag(v string) (fileCopy, error) {
	src, rest, ok := strings.Cut(v, ":")
	dst, mode, hasMode := strings.Cut(rest, ":")
	if !ok || src == "" || dst == "" {
		return fileCopy{}, fmt.Errorf("-file %q: want SRC:DST or SRC:DST:MODE", v)
	}
	if !path.IsAbs(dst) {
		return fileCopy{}, fmt.Errorf("-file %q: destination must be an absolute path in the image", v)
	}
	fc := fileCopy{Src: src, Dst: path.Clean(dst)}
	if hasMode {
		m, err := strconv.ParseInt(mode, 8, 64)
		if err != nil || m <= 0 || m > 0o7777 {
			return fileCopy{}, fmt.Errorf("-file %q: MODE %q is not an octal mode between 1 and 7777 (4755 for a setuid binary)", v, mode)
		}
		fc.Mode = m
	}
	return fc, nil
}
