package harness

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/splitlet/splitlet/internal/logctx"
	"go.uber.org/zap"
)

// defaultProfileSeconds is how long a burst profile lasts when
// Config.ProfileSeconds is unset: long enough to cover a 1000-pod burst.
const defaultProfileSeconds = 10

// startProfiles starts a CPU profile of every process serving pprof
// (targets: name to base URL), secs long, written to
// <name>-<label>.pprof, and returns a function that waits for them and
// lists the files written; secs 0 takes a heap profile instead (the live
// heap as of the last GC). Failures are logged, not fatal: a profile is a
// diagnosis, not a figure.
func startProfiles(ctx context.Context, cfg Config, label string, secs int, targets map[string]string) func() []string {
	if cfg.ProfileDir == "" {
		return func() []string { return nil }
	}
	log := logctx.From(ctx)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		files []string
	)
	for name, base := range targets {
		path := filepath.Join(cfg.ProfileDir, fmt.Sprintf("%s-%s.pprof", name, label))
		wg.Add(1)
		go func() {
			defer wg.Done()
			url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, secs)
			if secs == 0 {
				url = base + "/debug/pprof/heap"
			}
			if err := fetchProfile(ctx, url, path, time.Duration(secs+30)*time.Second); err != nil {
				log.Warn("profile failed", zap.String("process", name), zap.Error(err))
				return
			}
			mu.Lock()
			files = append(files, path)
			mu.Unlock()
		}()
	}
	return func() []string {
		wg.Wait()
		return files
	}
}

// burstProfileSeconds is the length of a burst's profile.
func burstProfileSeconds(cfg Config) int {
	if cfg.ProfileSeconds > 0 {
		return cfg.ProfileSeconds
	}
	return defaultProfileSeconds
}

func fetchProfile(ctx context.Context, url, path string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := httpGet(ctx, url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
