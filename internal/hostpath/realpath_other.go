//go:build !linux

package hostpath

import "path/filepath"

// realPath is filepath.EvalSymlinks; Linux has a shorter way.
func realPath(path string) (string, error) { return filepath.EvalSymlinks(path) }
