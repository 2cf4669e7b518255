package source

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	httpPod = "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: c, image: nginx}]\n"
	// A PodList as the API server writes it: items carry no apiVersion or kind.
	httpPodList = `{"apiVersion":"v1","kind":"PodList","items":[` +
		`{"metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"i"}]}},` +
		`{"metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"i"}]}}]}`
	httpSAPod  = "apiVersion: v1\nkind: Pod\nmetadata: {name: sa}\nspec:\n  serviceAccountName: default\n  containers: [{name: c, image: nginx}]\n"
	httpBadPod = "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec:\n  containers: [{name: c}]\n"
)

// manifestServer serves whatever body and status the test sets, and
// records the last request's headers.
type manifestServer struct {
	mu     sync.Mutex
	status int
	body   string
	header http.Header
}

func (m *manifestServer) set(status int, body string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.status, m.body = status, body
}

func (m *manifestServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.header = r.Header.Clone()
	w.WriteHeader(m.status)
	_, _ = w.Write([]byte(m.body))
}

// updates returns the updates published until none comes for a short
// while, as "OP a,b; OP c" with each update's pod names sorted.
func updates(t *testing.T, cfg *PodConfig) string {
	t.Helper()
	var out []string
	for {
		select {
		case u := <-cfg.Updates():
			var names []string
			for _, p := range u.Pods {
				names = append(names, p.Name)
			}
			sort.Strings(names)
			out = append(out, u.Op.String()+" "+strings.Join(names, ","))
		case <-time.After(200 * time.Millisecond):
			return strings.Join(out, "; ")
		}
	}
}

func TestHTTPSource(t *testing.T) {
	ctx := context.Background()
	srv := &manifestServer{status: http.StatusOK, body: httpPod}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	cfg := NewPodConfig(HTTPSourceName)
	var invalid []string
	h := NewHTTPSource(ts.URL, http.Header{"Authorization": {"Bearer t"}, "X-Two": {"a", "b"}}, "node1", time.Hour, cfg,
		func(url string, err error) { invalid = append(invalid, err.Error()) })

	steps := []struct {
		desc        string
		status      int
		body        string
		wantUpdate  string
		wantInvalid string
	}{
		{desc: "one pod, named like a static pod", status: 200, body: httpPod, wantUpdate: "ADD web-node1"},
		{desc: "the same answer again publishes nothing", status: 200, body: httpPod},
		{desc: "a server error keeps the last good set", status: 500, body: "oops", wantInvalid: "500"},
		{desc: "an invalid manifest keeps the last good set", status: 200, body: httpBadPod, wantInvalid: "spec.containers[0].image"},
		{desc: "a pod referencing an API object keeps the last good set (PreventStaticPodAPIReferences)", status: 200, body: httpSAPod,
			wantInvalid: "spec.serviceAccountName: Forbidden: static pods may not reference serviceaccounts"},
		{desc: "a PodList replaces the set", status: 200, body: httpPodList, wantUpdate: "REMOVE web-node1; ADD a-node1,b-node1"},
		{desc: "an empty answer is an empty set", status: 200, body: "", wantUpdate: "REMOVE a-node1,b-node1"},
	}
	for _, st := range steps {
		srv.set(st.status, st.body)
		before := len(invalid)
		h.poll(ctx)
		if got := updates(t, cfg); got != st.wantUpdate {
			t.Errorf("%s: updates %q, want %q", st.desc, got, st.wantUpdate)
		}
		if st.wantInvalid != "" && (len(invalid) != before+1 || !strings.Contains(invalid[len(invalid)-1], st.wantInvalid)) {
			t.Errorf("%s: reported %v, want one report containing %q", st.desc, invalid[before:], st.wantInvalid)
		}
		if st.wantInvalid == "" && len(invalid) != before {
			t.Errorf("%s: reported %v, want nothing", st.desc, invalid[before:])
		}
	}
	// The same error twice is reported once.
	srv.set(500, "oops")
	h.poll(ctx)
	h.poll(ctx)
	if n := strings.Count(strings.Join(invalid, "\n"), "500"); n != 2 {
		t.Errorf("500 reported %d times over two episodes, want 2 (once per episode)", n)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if got := srv.header.Get("Authorization"); got != "Bearer t" {
		t.Errorf("Authorization header = %q", got)
	}
	if got := srv.header.Values("X-Two"); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("X-Two headers = %q, want a then b", got)
	}
}
