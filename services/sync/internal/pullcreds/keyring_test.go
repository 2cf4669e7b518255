package pullcreds

import (
	"encoding/base64"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func dockerConfigJSON(name, uid, auths string) *v1.Secret {
	return &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)},
		Type:       v1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{v1.DockerConfigJsonKey: []byte(`{"auths":` + auths + `}`)},
	}
}

func users(creds []Credential) string {
	var out []string
	for _, c := range creds {
		out = append(out, c.Auth.Username+"@"+c.Secret.Name)
	}
	return strings.Join(out, ",")
}

func TestLookup(t *testing.T) {
	auth := base64.StdEncoding.EncodeToString([]byte("carol:pw3"))
	secrets := []*v1.Secret{
		dockerConfigJSON("a", "1", `{
			"registry.example.com": {"username": "alice", "password": "pw1"},
			"registry.example.com/team": {"username": "team", "password": "pw2"},
			"https://index.docker.io/v1/": {"auth": "`+auth+`"},
			"*.glob.example.com": {"username": "glob", "password": "g"},
			"localhost:5000": {"username": "local", "password": "l"}
		}`),
		{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "old", UID: "2"},
			Type:       v1.SecretTypeDockercfg,
			Data:       map[string][]byte{v1.DockerConfigKey: []byte(`{"registry.example.com": {"username": "bob", "password": "pw"}}`)},
		},
		// Not a pull secret: ignored.
		{ObjectMeta: metav1.ObjectMeta{Name: "opaque"}, Data: map[string][]byte{v1.DockerConfigJsonKey: []byte("{not json")}},
	}
	k, err := FromSecrets(secrets)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		image string
		want  string
	}{
		// The path-specific location comes before the host alone.
		{"registry.example.com/team/app:1", "team@a,alice@a,bob@old"},
		{"registry.example.com/other/app", "alice@a,bob@old"},
		// Docker Hub, through the index.docker.io login.
		{"busybox:1.36", "carol@a"},
		{"docker.io/library/busybox@sha256:" + strings.Repeat("a", 64), "carol@a"},
		{"someone/app", "carol@a"},
		// A glob covers one label, not two.
		{"x.glob.example.com/app", "glob@a"},
		{"x.y.glob.example.com/app", ""},
		// The port must match.
		{"localhost:5000/app", "local@a"},
		{"localhost:5001/app", ""},
		{"quay.io/app", ""},
	} {
		if got := users(k.Lookup(tc.image)); got != tc.want {
			t.Errorf("Lookup(%q) = %q, want %q", tc.image, got, tc.want)
		}
	}
	c := k.Lookup("busybox")[0]
	if c.Auth.Password != "pw3" || c.Secret != (SecretRef{UID: "1", Namespace: "ns", Name: "a"}) {
		t.Errorf("Docker Hub credential = %+v, want carol/pw3 from ns/a", c)
	}
}

func TestLoginHashIgnoresWhereItCameFrom(t *testing.T) {
	k, err := FromSecrets([]*v1.Secret{
		dockerConfigJSON("a", "1", `{"r.example.com": {"username": "u", "password": "p"}}`),
		dockerConfigJSON("b", "2", `{"r.example.com": {"auth": "`+base64.RawStdEncoding.EncodeToString([]byte("u:p"))+`"}}`),
		dockerConfigJSON("c", "3", `{"r.example.com": {"username": "u", "password": "other"}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	creds := k.Lookup("r.example.com/app")
	if len(creds) != 3 {
		t.Fatalf("got %d credentials, want 3", len(creds))
	}
	byName := map[string]string{}
	for _, c := range creds {
		byName[c.Secret.Name] = c.Hash
	}
	if byName["a"] != byName["b"] || byName["a"] == byName["c"] || byName["a"] == "" {
		t.Errorf("hashes %v: a and b hold the same login, c another", byName)
	}
}

func TestFromSecretsNamesABadSecret(t *testing.T) {
	for _, s := range []*v1.Secret{
		dockerConfigJSON("broken", "1", `[1]`),
		dockerConfigJSON("badauth", "1", `{"r.example.com": {"auth": "`+base64.StdEncoding.EncodeToString([]byte("no-colon"))+`"}}`),
	} {
		_, err := FromSecrets([]*v1.Secret{s})
		if err == nil || !strings.Contains(err.Error(), `secret "`+s.Name+`"`) {
			t.Errorf("FromSecrets(%s) = %v, want an error naming the secret", s.Name, err)
		}
	}
}
