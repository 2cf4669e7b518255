package cmd

import (
	"fmt"
	"io"
	"time"
)

// progress is the status line of a wait. On a terminal it is a spinner
// redrawn in place; otherwise a plain line is written each time the status
// changes. Nothing is shown during the first moment, so quick waits stay
// quiet, as the brief for apply --wait asks.
type progress struct {
	w        io.Writer
	tty      bool
	now      func() time.Time
	start    time.Time
	quietFor time.Duration
	frame    int
	last     string
	drawn    bool
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func newProgress(w io.Writer, tty bool, now func() time.Time) *progress {
	return &progress{w: w, tty: tty, now: now, start: now(), quietFor: time.Second}
}

// Update shows msg (redrawing the spinner on a terminal).
func (p *progress) Update(msg string) {
	if p.now().Sub(p.start) < p.quietFor {
		p.last = ""
		return
	}
	elapsed := p.now().Sub(p.start).Truncate(time.Second)
	if p.tty {
		p.frame = (p.frame + 1) % len(spinnerFrames)
		fmt.Fprintf(p.w, "\r\033[K%s %s (%s)", spinnerFrames[p.frame], msg, elapsed)
		p.drawn = true
		return
	}
	if msg != p.last {
		fmt.Fprintf(p.w, "%s (%s)\n", msg, elapsed)
		p.last = msg
	}
}

// Done clears the spinner line.
func (p *progress) Done() {
	if p.tty && p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}
