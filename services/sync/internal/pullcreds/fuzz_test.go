package pullcreds

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// FuzzKeyring: any pull secret content and image name either fails to
// parse with an error or yields credentials, never a panic, and every
// credential returned carries a login and a hash.
func FuzzKeyring(f *testing.F) {
	f.Add([]byte(`{"auths":{"registry.example.com":{"username":"u","password":"p"},"*.x.io:5000/p":{"auth":"dTpw"}}}`), "registry.example.com/app:1")
	f.Add([]byte(`{"auths":{"https://index.docker.io/v1/":{"auth":"dTpw"}}}`), "busybox")
	f.Add([]byte(`{"auths":{"[::1]:5000":{}}}`), "[::1]:5000/a@sha256:"+"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	f.Fuzz(func(t *testing.T, config []byte, image string) {
		k, err := FromSecrets([]*v1.Secret{{Type: v1.SecretTypeDockerConfigJson, Data: map[string][]byte{v1.DockerConfigJsonKey: config}}})
		if err != nil {
			return
		}
		for _, c := range k.Lookup(image) {
			if c.Auth == nil || c.Hash == "" {
				t.Fatalf("credential %+v has no login or hash", c)
			}
		}
	})
}
