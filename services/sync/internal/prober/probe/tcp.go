package probe

import (
	"net"
	"strconv"
	"time"
)

// TCP succeeds when a TCP connection to host:port opens within
// timeout. Matches the kubelet's tcp.DoTCPProbe: a dial error (refused,
// timed out) is a failure carrying the error text, not an error.
func TCP(host string, port int, timeout time.Duration) (Result, string, error) {
	conn, err := Dialer(timeout).Dial("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return Failure, err.Error(), nil
	}
	_ = conn.Close()
	return Success, "", nil
}
