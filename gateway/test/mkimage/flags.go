package main

import (
	"encoding/json"
	"fmt"
	"path"
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

// fileCopy is one -file SRC:DST.
type fileCopy struct {
	Src string // path on this machine
	Dst string // absolute path in the image
}

func parseFileFlag(v string) (fileCopy, error) {
	src, dst, ok := strings.Cut(v, ":")
	if !ok || src == "" || dst == "" {
		return fileCopy{}, fmt.Errorf("-file %q: want SRC:DST", v)
	}
	if !path.IsAbs(dst) {
		return fileCopy{}, fmt.Errorf("-file %q: destination must be an absolute path in the image", v)
	}
	return fileCopy{Src: src, Dst: path.Clean(dst)}, nil
}
