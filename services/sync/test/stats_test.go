package test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// clientCA writes a CA certificate to dir/ca.crt and returns a client
// certificate it signed, for a node API that trusts the CA
// (--client-ca-file without --kubeconfig: every verified client may call
// everything).
func clientCA(t *testing.T, dir string) tls.Certificate {
	t.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey, clientKey := newKey(), newKey()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	client := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "scraper"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	clientDER, err := x509.CreateCertificate(rand.Reader, client, ca, &clientKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{clientDER}, PrivateKey: clientKey}
}

// TestStatsOnFakeRuntime: the node API's /stats/summary and
// /metrics/resource report a pod on the gateway's fake backend from its
// ListPodSandboxStats and ListContainerStats: a working set above zero and
// a CPU counter that grows between two reads.
func TestStatsOnFakeRuntime(t *testing.T) {
	dir := t.TempDir()
	cert := clientCA(t, dir)
	nodeAPI := freeAddr(t)
	s := startStack(t, stackOptions{syncArgs: []string{"--node-api-addr=" + nodeAPI, "--client-ca-file=" + filepath.Join(dir, "ca.crt")}})
	s.apply(webPod)
	s.waitPod("web", 15*time.Second, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })

	// The node API's certificate is self-signed for the node's name.
	tr := &http.Transport{TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	get := func(path string) (string, error) {
		resp, err := client.Get("https://" + nodeAPI + path)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("%s: %d %s", path, resp.StatusCode, b)
		}
		return string(b), err
	}
	app := func() (*statsapi.ContainerStats, string) {
		raw, err := get("/stats/summary")
		if err != nil {
			return nil, err.Error()
		}
		var summary statsapi.Summary
		if err := json.Unmarshal([]byte(raw), &summary); err != nil {
			return nil, err.Error()
		}
		for _, p := range summary.Pods {
			if p.PodRef.Namespace == "default" && p.PodRef.Name == "web" && len(p.Containers) == 1 {
				return &p.Containers[0], raw
			}
		}
		return nil, "web not listed with one container: " + raw
	}
	var first *statsapi.ContainerStats
	waitFor(t, 10*time.Second, "web in /stats/summary", func() (bool, string) {
		c, msg := app()
		first = c
		return c != nil, msg
	})
	if first.Name != "app" || first.Memory == nil || first.Memory.WorkingSetBytes == nil || *first.Memory.WorkingSetBytes == 0 ||
		first.CPU == nil || first.CPU.UsageCoreNanoSeconds == nil || first.CPU.UsageNanoCores == nil {
		t.Fatalf("container %+v: want a working set, a CPU counter and the fake's rate", first)
	}
	waitFor(t, 10*time.Second, "web's CPU counter to grow", func() (bool, string) {
		c, msg := app()
		if c == nil {
			return false, msg
		}
		return *c.CPU.UsageCoreNanoSeconds > *first.CPU.UsageCoreNanoSeconds,
			fmt.Sprintf("%d, first %d", *c.CPU.UsageCoreNanoSeconds, *first.CPU.UsageCoreNanoSeconds)
	})
	metrics, err := get("/metrics/resource")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`container_memory_working_set_bytes{container="app",namespace="default",pod="web"} `, `pod_memory_working_set_bytes{namespace="default",pod="web"} `, "resource_scrape_error 0\n"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics/resource lacks %q:\n%s", want, metrics)
		}
	}
}
