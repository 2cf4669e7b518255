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
// (HTTP/2) write deadline d ahead, so a stream that keeps flowing never
// times out and one whose client stopped reading fails its next write.
func withWriteTimeout(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		dw := &deadlineWriter{ResponseWriter: w, rc: rc, d: d}
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
	rc     *http.ResponseController
	d      time.Duration
	failed bool
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.d))
	n, err := w.ResponseWriter.Write(p)
	w.failed = w.failed || err != nil
	return n, err
}

// Flush is what Connect calls after each streamed message.
func (w *deadlineWriter) Flush() {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.d))
	if err := w.rc.Flush(); err != nil {
		w.failed = true
	}
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
