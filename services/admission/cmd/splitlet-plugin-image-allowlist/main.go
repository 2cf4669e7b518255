// Command splitlet-plugin-image-allowlist is the example admission plugin: it
// admits a pod only when every image it names (init, regular and ephemeral
// containers) starts with one of the prefixes in SPLITLET_IMAGE_ALLOWLIST, a
// comma-separated list such as "registry.local/,docker.io/library/".
//
// It is started by the admission service, never by hand; list it in the
// plugin configuration with its SHA-256 checksum:
//
//	plugins:
//	  - name: image-allowlist
//	    path: /usr/libexec/splitlet/splitlet-plugin-image-allowlist
//	    sha256: <sha256sum of the binary>
//	    failurePolicy: Fail
//	    timeout: 500ms
//	    env:
//	      SPLITLET_IMAGE_ALLOWLIST: registry.local/
package main

import "github.com/splitlet/splitlet/services/admission/plugin"

func main() {
	plugin.Serve(allowlistFromEnv())
}
