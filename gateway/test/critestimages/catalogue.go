package main

import "fmt"

// Registry prefixes critest v1.30.0 pulls from (pkg/framework/test_context.go
// DefaultRegistryE2ETestImagesPrefix and pkg/validate/consts.go registry).
const (
	e2eImages   = "registry.k8s.io/e2e-test-images/"
	criToolsReg = "gcr.io/k8s-staging-cri-tools/"
)

// spec describes one image: every reference in refs names the same image, as
// critest's "different tags, same image" specs require.
type spec struct {
	refs       []string
	why        string
	user       string
	entrypoint []string
	cmd        []string
	env        []string
	files      []file
}

// file is an extra file laid over busybox in the image's second layer.
type file struct {
	path string
	mode int64
	data []byte
	// standin takes the file's content from the standin binary instead of data.
	standin bool
}

// missing is an image critest uses that we cannot rebuild, and why.
type missing struct{ ref, why string }

// unbuildable is listed in the summary so a failing spec is explained.
var unbuildable = []missing{
	{criToolsReg + "test-image-digest@sha256:9700f9a2f5bf2c45f2f605a0bd3bce7cf37420ec9d3ed50ac2758413308766bf",
		"pinned to the upstream image's digest; no local build can have that digest"},
}

func marker(name string) file { return file{path: name, mode: 0o644} }

// catalogue is every image critest v1.30.0 pulls on linux/amd64, read from its
// pkg/validate (consts.go, image.go, multi_container_linux.go,
// security_context_linux.go, networking.go) and images/ Dockerfiles.
func catalogue() []spec {
	specs := []spec{
		// Debian's busybox-static lacks the pgrep and ipcs applets the upstream
		// image has (critest's execSync-timeout and HostIpc specs run them).
		{refs: []string{e2eImages + "busybox:1.29-2"}, why: "default test container image (pgrep, ipcs from standin)", cmd: []string{"sh"},
			files: []file{{path: "bin/pgrep", mode: 0o755, standin: true}, {path: "bin/ipcs", mode: 0o755, standin: true}}},
		// containerd's sandbox_image; hack/lib/containerd.sh names it.
		{refs: []string{"registry.k8s.io/pause:3.10"}, why: "sandbox (pause) image",
			entrypoint: []string{"/pause"}, files: []file{{path: "pause", mode: 0o755, standin: true}}},
		// images/image-test: busybox plus an empty file named after the image, so
		// every one of them has its own digest.
		{refs: []string{criToolsReg + "test-image-latest:latest"}, why: "pull without tag", files: []file{marker("test-image-latest")}},
		{refs: []string{criToolsReg + "test-image-tag:test"}, why: "pull with tag", files: []file{marker("test")}},
		{refs: []string{criToolsReg + "test-image-tag:all"}, why: "pull with all references", files: []file{marker("all")}},
		{refs: []string{criToolsReg + "test-image-tags:1", criToolsReg + "test-image-tags:2", criToolsReg + "test-image-tags:3"},
			why: "different tags, same image", files: []file{marker("same-image")}},
		// images/image-user: busybox with a USER.
		{refs: []string{criToolsReg + "test-image-user-uid:latest"}, why: "image user as UID", user: "1002"},
		{refs: []string{criToolsReg + "test-image-user-username:latest"}, why: "image user as name", user: "www-data"},
		{refs: []string{criToolsReg + "test-image-user-uid-group:latest"}, why: "image user as UID:GID", user: "1003:1004"},
		{refs: []string{criToolsReg + "test-image-user-username-group:latest"}, why: "image user as name:GID", user: "www-data:1004"},
		// images/image-predefined-group: default-user (1000) is a member of
		// group-defined-in-image (50000).
		{refs: []string{criToolsReg + "test-image-predefined-group:latest"}, why: "groups defined in the image", user: "1000",
			files: []file{
				{path: "etc/passwd", mode: 0o644, data: []byte(basePasswd + "default-user:x:1000:1000::/home/default-user:/bin/sh\n")},
				{path: "etc/group", mode: 0o644, data: []byte(baseGroup + "default-user:x:1000:\ngroup-defined-in-image:x:50000:default-user\n")},
			}},
		// Stand-ins for upstream images that are not busybox: the standin binary
		// does the little of nginx / httpd / nonewprivs that critest checks.
		{refs: []string{e2eImages + "nginx:1.14-2"}, why: "stand-in for nginx: HTTP 200 on :80, /var/run/nginx.pid, process named nginx with a 'master process' title",
			entrypoint: []string{"/usr/sbin/nginx"}, env: []string{"STANDIN_PORT=80"},
			files: []file{{path: "usr/sbin/nginx", mode: 0o755, standin: true}}},
		{refs: []string{criToolsReg + "hostnet-nginx-amd64:latest"}, why: "stand-in for nginx listening on :12003 (images/hostnet-nginx)",
			entrypoint: []string{"/usr/sbin/nginx"}, env: []string{"STANDIN_PORT=12003"},
			files: []file{{path: "usr/sbin/nginx", mode: 0o755, standin: true}}},
		{refs: []string{e2eImages + "httpd:2.4.39-4"}, why: "stand-in for httpd: HTTP 200 on :80, logs its command line like Apache",
			entrypoint: []string{"/usr/local/apache2/bin/httpd"}, env: []string{"STANDIN_PORT=80"},
			files: []file{{path: "usr/local/apache2/bin/httpd", mode: 0o755, standin: true}}},
		{refs: []string{e2eImages + "nonewprivs:1.3"}, why: "stand-in for nonewprivs: a setuid-root binary printing its effective uid",
			entrypoint: []string{"/usr/local/bin/nnp"},
			files:      []file{{path: "usr/local/bin/nnp", mode: 0o4755, standin: true}}},
	}
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("test-image-%d", i)
		specs = append(specs, spec{refs: []string{criToolsReg + name + ":latest"}, why: "different tags, different images",
			files: []file{marker(name)}})
	}
	return specs
}

// The upstream busybox image's accounts that critest relies on (www-data for the
// username images, nobody for RunAsUserName).
const (
	basePasswd = "root:x:0:0:root:/root:/bin/sh\n" +
		"daemon:x:1:1:daemon:/usr/sbin:/bin/false\n" +
		"bin:x:2:2:bin:/bin:/bin/false\n" +
		"sys:x:3:3:sys:/dev:/bin/false\n" +
		"www-data:x:33:33:www-data:/var/www:/bin/false\n" +
		"nobody:x:65534:65534:nobody:/home:/bin/false\n"
	baseGroup = "root:x:0:\n" +
		"daemon:x:1:\n" +
		"bin:x:2:\n" +
		"sys:x:3:\n" +
		"www-data:x:33:\n" +
		"users:x:100:\n" +
		"nogroup:x:65534:\n"
)
