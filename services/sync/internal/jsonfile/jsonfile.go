// Package jsonfile keeps a value as a JSON file in sync's state directory:
// read at start, rewritten whole on every change so that a crash leaves
// either the old file or the new one.
package jsonfile

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/renameio/v2"
)

// Load reads path into v; a missing file leaves v untouched and is no
// error. An unreadable or corrupt file is an error and may leave v half
// filled, so callers decode into a fresh value.
func Load(path string, v any) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// Save writes v to path: a temporary file in the same directory (created
// 0700 if missing), synced and renamed over the old one (renameio), mode
// 0600.
func Save(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return renameio.WriteFile(path, b, 0o600)
}
