// Package hostpath compares paths on the node the way a mount sees them:
// after "..", and after the symbolic links of the part that exists, so a
// link cannot lead a hostPath mount somewhere a check did not look. The
// gateway's policy and sync's apply-time check of its own directories use
// it alike.
package hostpath

import (
	"path/filepath"
	"strings"
)

// Resolve is path cleaned, with the symbolic links of its longest existing
// prefix followed; the rest (a path a pod may still create,
// DirectoryOrCreate) is joined on unchanged.
func Resolve(path string) string {
	clean := filepath.Clean(path)
	rest := ""
	for dir := clean; ; dir = filepath.Dir(dir) {
		if real, err := realPath(dir); err == nil {
			return filepath.Join(real, rest)
		}
		if dir == "/" || dir == "." {
			return clean
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

// Within reports whether path is dir or below it, comparing whole path
// elements ("/var/lib/splitlet2" is not within "/var/lib/splitlet"). Both
// are taken as they are: Resolve them first.
func Within(path, dir string) bool {
	return dir == "/" || path == dir || strings.HasPrefix(path, dir+"/")
}
