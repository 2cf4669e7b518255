package server

import "net"

// netListenConfig opens unix sockets whose files outlive their listener, the
// way a crashed gateway leaves its socket behind.
type netListenConfig struct{}

func (netListenConfig) listenUnixNoUnlink(path string) (net.Listener, error) {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(false)
	return ln, nil
}
