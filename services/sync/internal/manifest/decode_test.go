package manifest

import (
	"errors"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
)

const yamlTwoPods = `# leading comment
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: nginx
    image: nginx:1.27
    ports:
    - containerPort: 80
---
# a document of only comments is skipped
---
apiVersion: v1
kind: Pod
metadata:
  name: db
  namespace: data
spec:
  containers:
  - name: pg
    image: postgres:16
`

const jsonTwoPods = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`

func TestDecode(t *testing.T) {
	tests := []struct {
		desc      string
		in        string
		wantNames []string
		// wantErr lists substrings the error must contain; empty means success.
		wantErr []string
		wantDoc int
	}{
		{
			desc:      "multi-document YAML with a comment-only document",
			in:        yamlTwoPods,
			wantNames: []string{"web", "db"},
		},
		{
			desc:      "JSON stream of two objects",
			in:        jsonTwoPods,
			wantNames: []string{"a", "b"},
		},
		{
			desc:      "single pretty-printed JSON object",
			in:        "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"Pod\",\n  \"metadata\": {\"name\": \"one\"}\n}\n",
			wantNames: []string{"one"},
		},
		{
			desc:      "leading and trailing separators and empty documents",
			in:        "---\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n---\n\n---\n",
			wantNames: []string{"x"},
		},
		{
			desc: "empty input",
			in:   "",
		},
		{
			desc:    "unknown field names its full path",
			in:      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers:\n  - name: c\n    imagee: busybox\n",
			wantErr: []string{`unknown field "spec.containers[0].imagee"`, "strict decoding error"},
		},
		{
			desc:    "unknown top-level field in second document carries its index",
			in:      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: second\nstatuss: {}\n",
			wantErr: []string{`unknown field "statuss"`},
			wantDoc: 1,
		},
		{
			desc:    "field names are case-sensitive like the API server",
			in:      `{"apiVersion":"v1","kind":"Pod","metadata":{"Name":"x"}}`,
			wantErr: []string{`unknown field "metadata.Name"`},
		},
		{
			desc:    "duplicate field in JSON",
			in:      `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","name":"y"}}`,
			wantErr: []string{`duplicate field "metadata.name"`},
		},
		{
			desc:    "wrong kind names kind",
			in:      "apiVersion: v1\nkind: Service\nmetadata:\n  name: x\n",
			wantErr: []string{`kind: Unsupported value: "Service"`},
		},
		{
			desc:    "wrong apiVersion names apiVersion",
			in:      "apiVersion: apps/v1\nkind: Pod\n",
			wantErr: []string{`apiVersion: Unsupported value: "apps/v1"`},
		},
		{
			desc:    "missing apiVersion and kind in third document",
			in:      "apiVersion: v1\nkind: Pod\n---\napiVersion: v1\nkind: Pod\n---\nmetadata:\n  name: x\n",
			wantErr: []string{"apiVersion: Required value", "kind: Required value"},
			wantDoc: 2,
		},
		{
			desc:    "document that is not an object",
			in:      "- a\n- b\n",
			wantErr: []string{"must be an object"},
		},
		{
			desc:    "YAML syntax error",
			in:      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: [x\n",
			wantErr: []string{"document 0"},
		},
		{
			desc:    "wrong value type",
			in:      "apiVersion: v1\nkind: Pod\nspec:\n  containers: notalist\n",
			wantErr: []string{"document 0"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			pods, err := Decode([]byte(tc.in))
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("Decode succeeded with %d pods, want error", len(pods))
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not contain %q", err, want)
					}
				}
				if !errors.Is(err, errdefs.ErrInvalidArgument) {
					t.Errorf("error %v does not wrap ErrInvalidArgument", err)
				}
				var de *DocumentError
				if !errors.As(err, &de) {
					t.Fatalf("error %T is not a *DocumentError", err)
				}
				if de.Index != tc.wantDoc {
					t.Errorf("document index = %d, want %d", de.Index, tc.wantDoc)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			var names []string
			for _, p := range pods {
				names = append(names, p.Name)
			}
			if strings.Join(names, ",") != strings.Join(tc.wantNames, ",") {
				t.Errorf("pod names = %v, want %v", names, tc.wantNames)
			}
		})
	}
}

func TestDecodeKeepsFields(t *testing.T) {
	pods, err := Decode([]byte(yamlTwoPods))
	if err != nil {
		t.Fatal(err)
	}
	web := pods[0]
	if got := web.Spec.Containers[0].Image; got != "nginx:1.27" {
		t.Errorf("image = %q", got)
	}
	if got := web.Spec.Containers[0].Ports[0].ContainerPort; got != 80 {
		t.Errorf("containerPort = %d", got)
	}
	if got := pods[1].Namespace; got != "data" {
		t.Errorf("namespace = %q", got)
	}
	// Decoding does not default: that is the defaults package's job.
	if web.Spec.RestartPolicy != "" || web.Spec.Containers[0].Ports[0].Protocol != "" {
		t.Errorf("Decode applied defaults: %+v", web.Spec)
	}
}

func TestMalformedQuantitiesAreNamedByField(t *testing.T) {
	for _, tc := range []struct{ manifest, want string }{
		{"resources: {limits: {cpu: abc}}", `spec.containers[0].resources.limits.cpu: Invalid value: "abc": quantities must match`},
		{"resources: {requests: {memory: 12XB, cpu: '1'}}", `spec.containers[0].resources.requests.memory: Invalid value: "12XB"`},
		{"resources: {requests: {memory: [1]}}", `spec.containers[0].resources.requests.memory: Invalid value`},
	} {
		doc := "apiVersion: v1\nkind: Pod\nmetadata: {name: q}\nspec:\n  containers:\n  - name: a\n    image: b\n    " + tc.manifest + "\n"
		_, err := Decode([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.manifest, err, tc.want)
		}
	}
	doc := "apiVersion: v1\nkind: Pod\nmetadata: {name: q}\nspec:\n  volumes: [{name: v, emptyDir: {sizeLimit: 1Zi}}]\n  containers: [{name: a, image: b}]\n"
	if _, err := Decode([]byte(doc)); err == nil || !strings.Contains(err.Error(), "spec.volumes[0].emptyDir.sizeLimit") {
		t.Errorf("emptyDir sizeLimit: %v", err)
	}
}
