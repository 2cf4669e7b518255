package nodeapi

import (
	"bufio"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"
)

// logRequest serves r through h and then logs, at debug level, what the
// kubelet's httplog.WithLogging logs at V(3) for each request it serves:
// the method and URI, the client, the status (or that the connection was
// hijacked for a stream, and the protocol it was upgraded to) and how
// long it took. Off (h serves w as is) unless log is at debug level.
func logRequest(log *zap.Logger, h http.Handler, w http.ResponseWriter, r *http.Request) {
	if !log.Core().Enabled(zap.DebugLevel) {
		h.ServeHTTP(w, r)
		return
	}
	start := time.Now()
	rw := &recordingWriter{ResponseWriter: w}
	h.ServeHTTP(rw, r)
	fields := []zap.Field{
		zap.String("uri", r.RequestURI), zap.String("client", r.RemoteAddr),
		zap.String("userAgent", r.UserAgent()), zap.Duration("latency", time.Since(start)),
	}
	if rw.hijacked {
		// Which stream protocol: SPDY, or a WebSocket the node translates.
		fields = append(fields, zap.Bool("hijacked", true), zap.String("upgrade", r.Header.Get("Upgrade")))
	} else {
		status := rw.status
		if status == 0 {
			status = http.StatusOK
		}
		fields = append(fields, zap.Int("status", status))
	}
	log.Debug("HTTP", fields...)
}

// recordingWriter remembers the status a handler wrote and whether it
// took the connection over. Flush and the rest reach the connection
// through Unwrap (http.ResponseController); Hijack is its own method
// because the stream handlers assert http.Hijacker.
type recordingWriter struct {
	http.ResponseWriter
	status   int
	hijacked bool
}

func (w *recordingWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *recordingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, buf, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.hijacked = true
	}
	return conn, buf, err
}

func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
