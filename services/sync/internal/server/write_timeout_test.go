package server

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"testing"
	"time"
)

// A response stream that goes quiet for longer than the write timeout (a
// watch with no pod events) keeps flowing when it writes again, over
// HTTP/2 as over HTTP/1.1. Before, the HTTP/2 stream's deadline, moved
// ahead at each write and never cleared, reset the stream d after its
// last write: every idle PodService Watch over h2c ended after 10 s.
func TestQuietStreamOutlivesTheWriteTimeout(t *testing.T) {
	const d = 100 * time.Millisecond
	for _, proto := range []string{"HTTP/1.1", "h2c"} {
		t.Run(proto, func(t *testing.T) {
			wroteFirst := make(chan struct{})
			h := withWriteTimeout(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Write([]byte("first\n"))
				w.(http.Flusher).Flush()
				close(wroteFirst)
				// The quiet spell under test is a length of time: three
				// write timeouts with nothing to write.
				select {
				case <-time.After(3 * d):
				case <-r.Context().Done():
					return
				}
				w.Write([]byte("second\n"))
				w.(http.Flusher).Flush()
			}), d)
			url, client := serve(t, h, proto == "h2c")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if want := map[bool]int{true: 2, false: 1}[proto == "h2c"]; resp.ProtoMajor != want {
				t.Fatalf("served over %s, want HTTP/%d", resp.Proto, want)
			}
			lines := bufio.NewScanner(resp.Body)
			for _, want := range []string{"first", "second"} {
				if !lines.Scan() {
					t.Fatalf("stream ended before %q: %v", want, lines.Err())
				}
				if lines.Text() != want {
					t.Fatalf("read %q, want %q", lines.Text(), want)
				}
			}
			<-wroteFirst
		})
	}
}

// serve runs h on a loopback listener and returns its URL and a client
// speaking HTTP/1.1 or, with h2c, unencrypted HTTP/2, as sync's server does.
func serve(t *testing.T, h http.Handler, h2c bool) (string, *http.Client) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: h, Protocols: &protocols}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	var cp http.Protocols
	if h2c {
		cp.SetUnencryptedHTTP2(true)
	} else {
		cp.SetHTTP1(true)
	}
	return "http://" + ln.Addr().String(), &http.Client{Transport: &http.Transport{Protocols: &cp}}
}
