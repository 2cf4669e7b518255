package nodeapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	flagzv1beta1 "k8s.io/apiserver/pkg/server/flagz/api/v1beta1"
	statuszv1beta1 "k8s.io/apiserver/pkg/server/statusz/api/v1beta1"
)

// getAccept is GET path as token with an Accept header.
func getAccept(t *testing.T, h http.Handler, path, token, accept string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestZpages: /flagz and /statusz answer as the kubelet's (k8s.io/apiserver's
// handlers): text by default, the structured kinds when asked for, each
// behind its own subresource.
func TestZpages(t *testing.T) {
	f := newFixture(t, admin)
	// The text delimiter is picked at random on each answer.
	delim := `(:|: |=| )`
	for _, tc := range []struct {
		desc, path, token, accept string
		wantCode                  int
		wantType                  string
		check                     func(t *testing.T, body string)
	}{
		{desc: "flagz as text", path: "/flagz", token: "configz", wantCode: 200, wantType: "text/plain; charset=utf-8",
			check: func(t *testing.T, body string) {
				for _, re := range []string{`kubelet flagz\n`, `\nmanifest-url-header` + delim + `CLASSIFIED\n`, `\nnode-name` + delim + testNode + `\n`} {
					if !regexp.MustCompile(re).MatchString(body) {
						t.Errorf("body %q does not match %q", body, re)
					}
				}
			}},
		{desc: "flagz as JSON", path: "/flagz", token: "configz", accept: "application/json;v=v1beta1;g=config.k8s.io;as=Flagz", wantCode: 200, wantType: "application/json;g=config.k8s.io;v=v1beta1;as=Flagz",
			check: func(t *testing.T, body string) {
				var fz flagzv1beta1.Flagz
				if err := json.Unmarshal([]byte(body), &fz); err != nil {
					t.Fatal(err)
				}
				if fz.Kind != "Flagz" || fz.APIVersion != "config.k8s.io/v1beta1" || fz.Name != "kubelet" || fz.Flags["node-name"] != testNode || len(fz.Flags) != 2 {
					t.Errorf("Flagz %+v", fz)
				}
			}},
		{desc: "flagz: JSON without the kind refused", path: "/flagz", token: "configz", accept: "application/json", wantCode: http.StatusNotAcceptable},
		{desc: "flagz is nodes/configz", path: "/flagz", token: "statusz", wantCode: 403,
			check: func(t *testing.T, body string) {
				if !strings.Contains(body, "subresource(s)=[configz]") {
					t.Errorf("body %q", body)
				}
			}},
		{desc: "statusz as text", path: "/statusz", token: "statusz", wantCode: 200, wantType: "text/plain; charset=utf-8",
			check: func(t *testing.T, body string) {
				for _, re := range []string{`kubelet statusz\n`, `\nStarted` + delim + ` `, `\nUp` + delim + ` \d+ hr`, `\nGo version` + delim + ` go1\.`,
					`\nBinary version` + delim + ` 1\.36\.3\n`, `\nPaths` + delim + ` /attach /containerLogs /exec /flagz /healthz /logs /metrics /pods /portForward /run /runningpods /statusz\n`} {
					if !regexp.MustCompile(re).MatchString(body) {
						t.Errorf("body %q does not match %q", body, re)
					}
				}
			}},
		{desc: "statusz as JSON", path: "/statusz", token: "statusz", accept: "application/json;v=v1beta1;g=config.k8s.io;as=Statusz", wantCode: 200, wantType: "application/json;g=config.k8s.io;v=v1beta1;as=Statusz",
			check: func(t *testing.T, body string) {
				var sz statuszv1beta1.Statusz
				if err := json.Unmarshal([]byte(body), &sz); err != nil {
					t.Fatal(err)
				}
				if sz.Kind != "Statusz" || sz.Name != "kubelet" || sz.BinaryVersion != "1.36.3" || sz.StartTime.IsZero() ||
					!strings.HasPrefix(sz.GoVersion, "go1.") || !slices.Contains(sz.Paths, "/flagz") || !slices.Contains(sz.Paths, "/statusz") {
					t.Errorf("Statusz %+v", sz)
				}
			}},
		{desc: "statusz is nodes/statusz", path: "/statusz", token: "configz", wantCode: 403,
			check: func(t *testing.T, body string) {
				if !strings.Contains(body, "subresource(s)=[statusz]") {
					t.Errorf("body %q", body)
				}
			}},
		{desc: "statusz without credentials", path: "/statusz", token: "stranger", wantCode: 401},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			rec := getAccept(t, f.srv, tc.path, tc.token, tc.accept)
			if rec.Code != tc.wantCode {
				t.Fatalf("GET %s: %d %q, want %d", tc.path, rec.Code, rec.Body.String(), tc.wantCode)
			}
			if got := rec.Header().Get("Content-Type"); tc.wantType != "" && got != tc.wantType {
				t.Errorf("Content-Type %q, want %q", got, tc.wantType)
			}
			if tc.check != nil {
				tc.check(t, rec.Body.String())
			}
		})
	}
}

// TestNoFlagzWithoutFlags: without flags there is no /flagz, and /statusz
// does not list it.
func TestNoFlagzWithoutFlags(t *testing.T) {
	srv := New(Options{NodeName: testNode, Pods: fakePods{}, Runtime: &fakeRuntime{}, Metrics: nil, Auth: admin})
	if rec := getAccept(t, srv, "/flagz", "configz", ""); rec.Code != http.StatusNotFound {
		t.Errorf("GET /flagz: %d, want 404", rec.Code)
	}
	if rec := getAccept(t, srv, "/statusz", "statusz", ""); rec.Code != 200 || strings.Contains(rec.Body.String(), "/flagz") {
		t.Errorf("GET /statusz: %d %q, want 200 without /flagz", rec.Code, rec.Body.String())
	}
}
