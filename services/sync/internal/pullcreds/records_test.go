package pullcreds

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func cred(secret, uid, hash string) Credential {
	return Credential{Secret: SecretRef{UID: uid, Namespace: "ns", Name: secret}, Hash: hash}
}

func mustPull(t *testing.T, r *Records, image, ref string, creds ...Credential) bool {
	t.Helper()
	got, err := r.MustPull(image, ref, func() ([]Credential, error) { return creds, nil })
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestMustPull(t *testing.T) {
	path := filepath.Join(t.TempDir(), "image-pulls.json")
	r, err := OpenRecords(path)
	if err != nil {
		t.Fatal(err)
	}
	const private, public = "registry.example.com/private:1", "registry.example.com/public:1"

	// Preloaded images (never pulled by sync) are anyone's.
	if mustPull(t, r, private, "sha256:p") {
		t.Error("a preloaded image must not be verified")
	}
	// A pull in progress makes the image sync's: verify until recorded.
	if err := r.StartPull(private); err != nil {
		t.Fatal(err)
	}
	if !mustPull(t, r, private, "sha256:p", cred("a", "1", "h1")) {
		t.Error("an image whose pull is in progress must be verified")
	}
	if err := r.EndPull(private, "sha256:p", &Credential{Secret: SecretRef{UID: "1", Namespace: "ns", Name: "a"}, Hash: "h1"}); err != nil {
		t.Fatal(err)
	}
	if err := r.StartPull(public); err != nil {
		t.Fatal(err)
	}
	if err := r.EndPull(public, "sha256:q", nil); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		desc  string
		image string
		creds []Credential
		want  bool
	}{
		{"no credentials", private, nil, true},
		{"another login", private, []Credential{cred("b", "2", "h2")}, true},
		{"the same Secret", private, []Credential{cred("a", "1", "h1")}, false},
		{"the same login in another Secret", private, []Credential{cred("b", "2", "h2"), cred("c", "3", "h1")}, false},
		{"the same Secret rotated", private, []Credential{cred("a", "1", "h-new")}, false},
		{"a re-created Secret of the same name with another login", private, []Credential{cred("a", "9", "h9")}, true},
		{"the same image under another repository name", "registry.example.com/mirror:1", []Credential{cred("a", "1", "h1")}, true},
		{"pulled without credentials", public, nil, false},
	} {
		ref := "sha256:p"
		if tc.image == public {
			ref = "sha256:q"
		}
		if got := mustPull(t, r, tc.image, ref, tc.creds...); got != tc.want {
			t.Errorf("%s: MustPull = %v, want %v", tc.desc, got, tc.want)
		}
	}

	// The records survive a restart, with what matches taught them: the
	// other Secret holding the same login now matches by name too.
	r2, err := OpenRecords(path)
	if err != nil {
		t.Fatal(err)
	}
	if mustPull(t, r2, private, "sha256:p", cred("c", "3", "h-other")) {
		t.Error("after a restart, Secret ns/c (remembered by a match) must still be let through")
	}
	if !mustPull(t, r2, private, "sha256:p") {
		t.Error("after a restart, a pod without credentials must still pull the private image")
	}
}

// A crash between StartPull and EndPull leaves the image counted as sync's.
func TestInterruptedPullStaysVerified(t *testing.T) {
	path := filepath.Join(t.TempDir(), "image-pulls.json")
	r, _ := OpenRecords(path)
	if err := r.StartPull("registry.example.com/private:1"); err != nil {
		t.Fatal(err)
	}
	r2, err := OpenRecords(path)
	if err != nil {
		t.Fatal(err)
	}
	if !mustPull(t, r2, "registry.example.com/private:1", "sha256:p") {
		t.Error("an image whose pull was cut short must be verified")
	}
}

func TestCorruptRecordsVerifyEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "image-pulls.json")
	if err := os.WriteFile(path, []byte(`{"pulled": {"sha256:p": [`), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRecords(path)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("OpenRecords = %v, want an error naming %s", err, path)
	}
	if !mustPull(t, r, "busybox:1.36", "sha256:b") {
		t.Error("with unreadable records a present image must be verified")
	}
	// The distrust is kept on disk once the file is rewritten.
	if err := r.StartPull("other:1"); err != nil {
		t.Fatal(err)
	}
	r2, err := OpenRecords(path)
	if err != nil {
		t.Fatal(err)
	}
	if !mustPull(t, r2, "busybox:1.36", "sha256:b") {
		t.Error("after a restart, images without records must still be verified")
	}
}
