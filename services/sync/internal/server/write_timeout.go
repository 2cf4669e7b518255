package server

import (
	"net/http"
	"time"
)

// WriteTimeout is how long one write to a PodService client may wait for
// the client to take it. A watcher (or a followed log) that stops reading
// holds its stream's goroutine and buffers for as long as its connection
// stays open; past this it is dropped instead, as a watcher that falls too
// far behind the pod events is (watchBuffer).
const WriteTimeout = 10 * time.Second

// withWriteTimeout gives every write of h's responses d to complete: before
// each write and flush it moves the connection's (HTTP/1.1) or stream's
// (HTTP/2) write deadline d ahead, so a stream whose client stopped reading
// fails the write that waits. On HTTP/2 the deadline is cleared once the
// write is done: a stream's deadline resets the stream when it passes,
// whether or not a write is waiting, which cut every quiet watch 10 s after
// its last event. A connection's deadline (HTTP/1.1) only fails a write, and
// is left as it was.
func withWriteTimeout(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		dw := &deadlineWriter{ResponseWriter: w, rc: rc, d: d, clear: r.ProtoMajor >= 2}
		h.ServeHTTP(dw, r)
		// An HTTP/1.1 connection keeps its deadline into the next request,
		// which may not be the PodService's (/metrics, /healthz): clear it.
		// After a failed write the response is cut short and the
		// connection is of no more use: an expired deadline makes the
		// server close it rather than wait for a next request on it.
		end := time.Time{}
		if dw.failed {
			end = time.Now()
		}
		_ = rc.SetWriteDeadline(end)
	})
}

type deadlineWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
	// clear ends each write's deadline once the write is done (HTTP/2).
	clear  bool
	failed bool
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.d))
	n, err := w.ResponseWriter.Write(p)
	w.done(err)
	return n, err
}

// done ends a write's deadline; after a failed one the deadline is left
// to cut the stream.
func (w *deadlineWriter) done(err error) {
	if err != nil {
		w.failed = true
		return
	}
	if w.clear {
		_ = w.rc.SetWriteDeadline(time.Time{})
	}
}

// Flush is what Connect calls after each streamed message.
func (w *deadlineWriter) Flush() {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.d))
	w.done(w.rc.Flush())
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
