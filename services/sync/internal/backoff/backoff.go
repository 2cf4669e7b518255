package backoff

import (
	"sync"
	"time"
)

// Defaults match the kubelet: the crash-loop and image-pull back-offs both
// start at backOffPeriod (10 s) and stop at MaxContainerBackOff /
// MaxImageBackOff (300 s); a key is considered stable, and reset, after
// 600 s without an update (the kubelet's crash-loop HasExpiredFunc, and
// flowcontrol's default of twice the maximum).
const (
	DefaultInitial    = 10 * time.Second
	DefaultMax        = 300 * time.Second
	DefaultResetAfter = 2 * DefaultMax
	// CrashLoopResetAfter is how long the kubelet's crash-loop back-off
	// keeps a container's delay without a restart, whatever its cap
	// (maxContainerRestartPeriod): its HasExpiredFunc's 600 s.
	CrashLoopResetAfter = 600 * time.Second
)

// Clock is the time source; tests inject a fake one. k8s.io/utils/clock's
// clocks satisfy it.
type Clock interface {
	Now() time.Time
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

var _ Clock = realClock{}

// Config sets the back-off curve. Zero fields take the defaults;
// ResetAfter defaults to twice Max.
type Config struct {
	Initial    time.Duration
	Max        time.Duration
	ResetAfter time.Duration
}

type entry struct {
	backoff    time.Duration
	lastUpdate time.Time
	// lastErr is the image puller's last failure, shown while it backs off.
	lastErr string
}

// Backoff is a table of per-key exponential back-offs. It matches client-go's
// flowcontrol.Backoff without jitter (the kubelet uses none for containers
// and image pulls). It is safe for concurrent use: every pod worker shares
// one.
type Backoff struct {
	mu         sync.Mutex
	clock      Clock
	initial    time.Duration
	max        time.Duration
	resetAfter time.Duration
	entries    map[string]*entry
}

// New returns an empty table with cfg's curve, reading time from clock (the
// wall clock when nil).
func New(cfg Config, clock Clock) *Backoff {
	if cfg.Initial <= 0 {
		cfg.Initial = DefaultInitial
	}
	if cfg.Max <= 0 {
		cfg.Max = DefaultMax
	}
	// An initial delay above the cap would make the first delay exceed
	// what later ones may reach.
	cfg.Initial = min(cfg.Initial, cfg.Max)
	if cfg.ResetAfter <= 0 {
		cfg.ResetAfter = 2 * cfg.Max
	}
	if clock == nil {
		clock = realClock{}
	}
	return &Backoff{
		clock:      clock,
		initial:    cfg.Initial,
		max:        cfg.Max,
		resetAfter: cfg.ResetAfter,
		entries:    make(map[string]*entry),
	}
}

// Now returns the table's clock reading, so that callers timestamp the
// events they pass in with the same clock.
func (b *Backoff) Now() time.Time { return b.clock.Now() }

// Get returns key's current delay, zero when the key has none. Matches
// flowcontrol.Backoff.Get.
func (b *Backoff) Get(key string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.entries[key]; ok {
		return e.backoff
	}
	return 0
}

// Next records one more failure of key observed at eventTime: a new key, or
// one whose last update is more than ResetAfter before eventTime, starts at
// Initial; otherwise the delay doubles, capped at Max. The update is stamped
// with the clock's now. Matches flowcontrol.Backoff.Next.
func (b *Backoff) Next(key string, eventTime time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok || b.hasExpired(eventTime, e.lastUpdate) {
		e = &entry{backoff: b.initial}
		b.entries[key] = e
	} else {
		e.backoff = min(2*e.backoff, b.max)
	}
	e.lastUpdate = b.clock.Now()
}

// IsInBackOffSince reports whether an event at eventTime (for a container,
// when it last finished) is still inside key's delay as of now. A key with
// no entry, or whose entry has expired relative to eventTime, is not backing
// off. Matches flowcontrol.Backoff.IsInBackOffSince.
func (b *Backoff) IsInBackOffSince(key string, eventTime time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok || b.hasExpired(eventTime, e.lastUpdate) {
		return false
	}
	return b.clock.Now().Sub(eventTime) < e.backoff
}

// IsInBackOffSinceUpdate reports whether eventTime (usually now) is less
// than key's delay after its last update. The image puller asks this: its
// event is "now", and the delay counts from the last failed pull. Matches
// flowcontrol.Backoff.IsInBackOffSinceUpdate.
func (b *Backoff) IsInBackOffSinceUpdate(key string, eventTime time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok || b.hasExpired(eventTime, e.lastUpdate) {
		return false
	}
	return eventTime.Sub(e.lastUpdate) < e.backoff
}

// Reset forgets key, so its next failure starts at Initial.
func (b *Backoff) Reset(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.entries, key)
}

// GC drops every entry not updated for more than ResetAfter: such an entry
// would be reset by its next event anyway, so keeping it only costs memory
// (pods come and go). Call it from housekeeping. Matches
// flowcontrol.Backoff.GC with the kubelet's expiry.
func (b *Backoff) GC() {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	for key, e := range b.entries {
		if now.Sub(e.lastUpdate) > b.resetAfter {
			delete(b.entries, key)
		}
	}
}

// Len returns the number of keys held.
func (b *Backoff) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.entries)
}

// hasExpired reports whether the entry last updated at lastUpdate is stale
// for an event at eventTime. The kubelet replaces flowcontrol's default
// (twice the max) by a fixed 600 s for crash loops; ResetAfter covers both.
func (b *Backoff) hasExpired(eventTime, lastUpdate time.Time) bool {
	return eventTime.Sub(lastUpdate) > b.resetAfter
}
