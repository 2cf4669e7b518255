package cri

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// handshake is what one side of an HTTP/2 connection announced first: its
// SETTINGS and the increment of its first connection-level WINDOW_UPDATE.
type handshake struct {
	settings   map[http2.SettingID]uint32
	connWindow uint32
}

// readHandshake reads frames from c until it has seen the peer's SETTINGS and
// connection WINDOW_UPDATE. A peer sends that WINDOW_UPDATE right after its
// SETTINGS or not at all (default window), so once SETTINGS arrived a quiet
// second ends the handshake with connWindow 0.
func readHandshake(c net.Conn) (handshake, error) {
	hs := handshake{settings: map[http2.SettingID]uint32{}}
	fr := http2.NewFramer(io.Discard, c)
	gotSettings := false
	for range 8 {
		f, err := fr.ReadFrame()
		if err != nil {
			if gotSettings {
				return hs, nil
			}
			return hs, err
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() {
				continue
			}
			gotSettings = true
			c.SetReadDeadline(time.Now().Add(time.Second))
			f.ForeachSetting(func(s http2.Setting) error { hs.settings[s.ID] = s.Val; return nil })
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 {
				hs.connWindow = f.Increment
			}
		}
		if gotSettings && hs.connWindow != 0 {
			return hs, nil
		}
	}
	return hs, io.ErrUnexpectedEOF
}

// TestDialWindows checks the connection to the runtime announces fixed
// windows, which is how grpc-go turns its BDP estimator (a PING after almost
// every reply) off.
func TestDialWindows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raw.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan handshake, 1)
	errc := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			errc <- err
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		preface := make([]byte, len(http2.ClientPreface))
		if _, err := io.ReadFull(c, preface); err != nil || string(preface) != http2.ClientPreface {
			errc <- err
			return
		}
		hs, err := readHandshake(c)
		if err != nil {
			errc <- err
			return
		}
		got <- hs
	}()

	// A negative ConnectTimeout skips New's Version call; the call below
	// makes the client connect, and times out since nobody answers it.
	rt, err := New(context.Background(), path, Options{ConnectTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rt.conn.Connect()

	var hs handshake
	select {
	case hs = <-got:
	case err := <-errc:
		t.Fatalf("reading the client's handshake: %v", err)
	case <-ctx.Done():
		t.Fatal("the cri backend never connected")
	}
	if w := hs.settings[http2.SettingInitialWindowSize]; w != streamWindowSize {
		t.Errorf("SETTINGS_INITIAL_WINDOW_SIZE = %d, want %d", w, streamWindowSize)
	}
	// The connection window starts at HTTP/2's 65535 and is raised by the
	// first WINDOW_UPDATE.
	if w := hs.connWindow + 65535; w != connWindowSize {
		t.Errorf("connection window = %d, want %d", w, connWindowSize)
	}
}
