package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The identities the API server's authenticators and the Node authorizer
// read come out of the files as they are meant: subject, groups, usage,
// a chain to the CA, and a kubeconfig pointing at all of them.
func TestNodeKubeconfigIdentity(t *testing.T) {
	dir := t.TempDir()
	c := &Cluster{cfg: Config{Dir: dir}, Server: "https://127.0.0.1:6443"}
	if err := c.writePKI(); err != nil {
		t.Fatal(err)
	}
	if err := c.writeKubeconfigs(); err != nil {
		t.Fatal(err)
	}
	kc, err := c.NodeKubeconfig("node-a")
	if err != nil {
		t.Fatal(err)
	}
	// What a later process gets from the files alone.
	opened, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if opened.Server != c.Server || opened.AdminKubeconfig != c.AdminKubeconfig {
		t.Errorf("Open: server %q kubeconfig %q, want %q %q", opened.Server, opened.AdminKubeconfig, c.Server, c.AdminKubeconfig)
	}
	body, err := os.ReadFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"server: " + c.Server, "client-certificate: " + filepath.Join(dir, "pki", "node-node-a.crt"), "certificate-authority: " + c.CAFile} {
		if !strings.Contains(string(body), want) {
			t.Errorf("node kubeconfig lacks %q:\n%s", want, body)
		}
	}

	roots := x509.NewCertPool()
	roots.AddCert(c.pki.caCert)
	for _, tc := range []struct {
		desc, name, cn string
		groups         []string
		usage          x509.ExtKeyUsage
	}{
		{desc: "node identity", name: "node-node-a", cn: "system:node:node-a", groups: []string{"system:nodes"}, usage: x509.ExtKeyUsageClientAuth},
		{desc: "admin", name: "admin", cn: "kubernetes-admin", groups: []string{"system:masters"}, usage: x509.ExtKeyUsageClientAuth},
		{desc: "scheduler", name: "scheduler", cn: "system:kube-scheduler", usage: x509.ExtKeyUsageClientAuth},
		{desc: "serving", name: "apiserver", cn: "kube-apiserver", usage: x509.ExtKeyUsageServerAuth},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			pair, err := tls.LoadX509KeyPair(c.pki.path(tc.name+".crt"), c.pki.path(tc.name+".key"))
			if err != nil {
				t.Fatal(err)
			}
			cert := pair.Leaf
			if cert.Subject.CommonName != tc.cn || !slices.Equal(cert.Subject.Organization, tc.groups) {
				t.Errorf("subject %v, want CN=%s O=%v", cert.Subject, tc.cn, tc.groups)
			}
			if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{tc.usage}}); err != nil {
				t.Errorf("does not verify against the cluster CA for %v: %v", tc.usage, err)
			}
		})
	}
	serving, err := tls.LoadX509KeyPair(c.pki.path("apiserver.crt"), c.pki.path("apiserver.key"))
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"127.0.0.1", "10.96.0.1", "kubernetes.default.svc"} {
		if err := serving.Leaf.VerifyHostname(host); err != nil {
			t.Errorf("serving certificate: %v", err)
		}
	}

	// A node's serving certificate verifies, for its name and IPs, against
	// the CA the API server checks nodes with.
	certFile, keyFile, err := c.NodeServingCert("node-a", []net.IP{net.IPv4(10, 0, 0, 7)})
	if err != nil {
		t.Fatal(err)
	}
	node, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"node-a", "10.0.0.7"} {
		if _, err := node.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("node serving certificate for %s: %v", host, err)
		}
	}
}
