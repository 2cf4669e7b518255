package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeRegistry is a hand-written registry v2 server holding blobs per
// repository; it refuses a blob whose content does not match its digest and a
// manifest that names a blob it does not have, as a real registry does.
type fakeRegistry struct {
	mu        sync.Mutex
	blobs     map[string]map[string][]byte // repo -> digest -> data
	manifests map[string]string            // repo:tag -> manifest digest
	uploads   int
	nextID    int
}

func newFakeRegistry() *fakeRegistry {
	return &fakeRegistry{blobs: map[string]map[string][]byte{}, manifests: map[string]string{}}
}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func (f *fakeRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := strings.TrimPrefix(r.URL.Path, "/v2/")
	switch {
	case r.Method == http.MethodHead && strings.Contains(p, "/blobs/"):
		repo, d, _ := strings.Cut(p, "/blobs/")
		if _, ok := f.blobs[repo][d]; ok {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusNotFound)
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/blobs/uploads/"):
		repo := strings.TrimSuffix(p, "/blobs/uploads/")
		f.nextID++
		// A relative location with state in its query, as distribution sends.
		w.Header().Set("Location", fmt.Sprintf("/v2/%s/blobs/uploads/u%d?_state=s%d", repo, f.nextID, f.nextID))
		w.WriteHeader(http.StatusAccepted)
	case r.Method == http.MethodPut && strings.Contains(p, "/blobs/uploads/"):
		repo, _, _ := strings.Cut(p, "/blobs/uploads/")
		if r.URL.Query().Get("_state") == "" {
			http.Error(w, "lost upload state", http.StatusBadRequest)
			return
		}
		data, _ := io.ReadAll(r.Body)
		d := r.URL.Query().Get("digest")
		if digestOf(data) != d {
			http.Error(w, "digest mismatch", http.StatusBadRequest)
			return
		}
		if f.blobs[repo] == nil {
			f.blobs[repo] = map[string][]byte{}
		}
		f.blobs[repo][d] = data
		f.uploads++
		w.WriteHeader(http.StatusCreated)
	case r.Method == http.MethodPut && strings.Contains(p, "/manifests/"):
		repo, tag, _ := strings.Cut(p, "/manifests/")
		data, _ := io.ReadAll(r.Body)
		var m struct {
			Config struct{ Digest string }
			Layers []struct{ Digest string }
		}
		if err := json.Unmarshal(data, &m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, d := range append([]string{m.Config.Digest}, func() []string {
			var ds []string
			for _, l := range m.Layers {
				ds = append(ds, l.Digest)
			}
			return ds
		}()...) {
			if _, ok := f.blobs[repo][d]; !ok {
				http.Error(w, "blob unknown: "+d, http.StatusBadRequest)
				return
			}
		}
		f.manifests[repo+":"+tag] = digestOf(data)
		w.Header().Set("Docker-Content-Digest", digestOf(data))
		w.WriteHeader(http.StatusCreated)
	default:
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusMethodNotAllowed)
	}
}

func TestPushCatalogue(t *testing.T) {
	reg := newFakeRegistry()
	srv := httptest.NewServer(reg)
	defer srv.Close()
	c := &registryClient{base: srv.URL, http: srv.Client()}

	specs, err := buildCatalogue(testInputs)
	if err != nil {
		t.Fatal(err)
	}
	pushAll := func() {
		for _, s := range specs {
			for _, ref := range s.refs {
				repo, tag, err := splitRef(ref)
				if err != nil {
					t.Fatal(err)
				}
				got, err := c.push(context.Background(), repo, tag, s.built)
				if err != nil {
					t.Fatalf("push %s: %v", ref, err)
				}
				if got != s.built.manifest.digest || reg.manifests[repo+":"+tag] != got {
					t.Errorf("%s: pushed %s, registry has %s, built %s", ref, got, reg.manifests[repo+":"+tag], s.built.manifest.digest)
				}
			}
		}
	}
	pushAll()
	if reg.uploads == 0 {
		t.Fatal("nothing was uploaded")
	}
	first := reg.uploads
	pushAll()
	if reg.uploads != first {
		t.Errorf("second push uploaded %d blobs again; existing blobs must be skipped", reg.uploads-first)
	}
}

func TestPushReportsRegistryErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		http.Error(w, "denied", http.StatusForbidden)
	}))
	defer srv.Close()
	c := &registryClient{base: srv.URL, http: srv.Client()}
	specs, err := buildCatalogue(testInputs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.push(context.Background(), "a/b", "c", specs[0].built); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("err = %v, want the registry's 403", err)
	}
}
