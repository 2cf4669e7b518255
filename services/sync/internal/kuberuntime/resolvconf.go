package kuberuntime

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// resolvConfCache keeps the host's resolv.conf parsed. The kubelet's
// getHostDNSConfig reads and parses the file for every pod (twice: its
// sandbox config is generated twice per SyncPod); a burst of pods made that
// read a few percent of sync's CPU. The cache stats the file on every call
// and parses it again when its inode, size or modification time changed, so
// an edit is seen by the next pod, as in the kubelet.
type resolvConfCache struct {
	mu   sync.Mutex
	path string
	key  fileKey
	dns  *runtimeapi.DNSConfig
}

// fileKey is what tells one version of a file from another without reading
// it.
type fileKey struct {
	ino, size int64
	mtime     time.Time
}

func statKey(path string) (fileKey, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileKey{}, err
	}
	k := fileKey{size: fi.Size(), mtime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		k.ino = int64(st.Ino)
	}
	return k, nil
}

// get returns a copy of path's parsed configuration, which the caller may
// change.
func (c *resolvConfCache) get(path string) (*runtimeapi.DNSConfig, error) {
	key, err := statKey(path)
	if err != nil {
		return nil, fmt.Errorf("read host resolv.conf %s: %w", path, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dns == nil || c.path != path || c.key != key {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read host resolv.conf %s: %w", path, err)
		}
		c.path, c.key, c.dns = path, key, parseResolvConf(string(data))
	}
	return &runtimeapi.DNSConfig{
		Servers:  slices.Clone(c.dns.Servers),
		Searches: slices.Clone(c.dns.Searches),
		Options:  slices.Clone(c.dns.Options),
	}, nil
}
