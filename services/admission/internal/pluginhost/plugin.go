package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	"go.uber.org/zap"
)

// errClosed is returned for calls after Close.
var errClosed = errors.New("admission plugin host is closed")

// hostPlugin is one configured plugin and its current process, restarted
// when it has exited.
type hostPlugin struct {
	cfg    PluginConfig
	log    *zap.Logger
	launch launchFunc
	now    func() time.Time

	mu      sync.Mutex
	cur     *instance
	backoff restartBackoff
	starts  int // start attempts, for tests and logs
	closed  bool
}

// get returns the running instance, starting the plugin when its process
// has exited (or never started) and the restart back-off allows it. Starting
// happens under the lock so that concurrent admissions start one process,
// not one each.
func (p *hostPlugin) get(ctx context.Context) (*instance, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errClosed
	}
	if p.cur != nil {
		if !p.cur.exited() {
			return p.cur, nil
		}
		p.log.Warn("admission plugin process exited; restarting it", zap.Int("pid", p.cur.pid))
		// Reaps the process and removes go-plugin's socket directory.
		p.cur.kill()
		p.cur = nil
	}
	if wait := p.backoff.wait(p.now()); wait > 0 {
		return nil, fmt.Errorf("%w: restart back-off after %d restarts in a row; next start in %s",
			errdefs.ErrUnavailable, p.backoff.steps, wait.Round(time.Millisecond))
	}
	return p.startLocked(ctx)
}

func (p *hostPlugin) startLocked(ctx context.Context) (*instance, error) {
	p.backoff.started(p.now())
	p.starts++
	inst, err := p.launch(ctx)
	if err != nil {
		p.log.Error("admission plugin failed to start", zap.Int("attempt", p.starts), zap.Error(err))
		return nil, err
	}
	p.cur = inst
	p.log.Info("admission plugin started", zap.Int("pid", inst.pid), zap.Int("attempt", p.starts),
		zap.String("pluginName", inst.info.Name), zap.String("pluginVersion", inst.info.Version),
		zap.Bool("keepsActiveSets", inst.plugin.KeepsActiveSets()))
	return inst, nil
}

func (p *hostPlugin) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.cur != nil {
		p.cur.kill()
		p.cur = nil
	}
}
