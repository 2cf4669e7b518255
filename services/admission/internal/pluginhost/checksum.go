package pluginhost

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/containerd/errdefs"
)

// ErrChecksumMismatch is matched (errors.Is) by every ChecksumMismatchError.
var ErrChecksumMismatch = errors.New("admission plugin checksum mismatch")

// ChecksumMismatchError refuses a plugin binary whose SHA-256 is not the
// configured one: the binary changed since it was configured (an upgrade not
// reflected in the configuration, or tampering). It also matches
// errdefs.ErrFailedPrecondition.
type ChecksumMismatchError struct {
	Plugin   string
	Path     string
	Expected string
	Actual   string
}

func (e *ChecksumMismatchError) Error() string {
	return fmt.Sprintf("admission plugin %q: binary %s has sha256 %s but the configuration expects %s; refusing to start a changed binary",
		e.Plugin, e.Path, e.Actual, e.Expected)
}

// Is makes errors.Is(err, ErrChecksumMismatch) hold.
func (e *ChecksumMismatchError) Is(target error) bool { return target == ErrChecksumMismatch }

// Unwrap classifies the error for errdefs users.
func (e *ChecksumMismatchError) Unwrap() error { return errdefs.ErrFailedPrecondition }

// verifyChecksum hashes the plugin's binary and compares it with the
// configured sum. It returns the configured sum as bytes for go-plugin's
// SecureConfig, which checks again right before exec.
func verifyChecksum(p *PluginConfig) ([]byte, error) {
	want, err := hex.DecodeString(p.SHA256)
	if err != nil {
		return nil, fmt.Errorf("%w: admission plugin %q: sha256: %v", errdefs.ErrInvalidArgument, p.Name, err)
	}
	f, err := os.Open(p.Path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: admission plugin %q: %v", errdefs.ErrNotFound, p.Name, err)
		}
		return nil, fmt.Errorf("admission plugin %q: %w", p.Name, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, fmt.Errorf("admission plugin %q: hash %s: %w", p.Name, p.Path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != p.SHA256 {
		return nil, &ChecksumMismatchError{Plugin: p.Name, Path: p.Path, Expected: p.SHA256, Actual: got}
	}
	return want, nil
}
