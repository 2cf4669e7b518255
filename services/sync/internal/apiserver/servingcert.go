package apiserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/certificate"
)

// NewServingCertManager returns a started manager of the node API's
// serving certificate, requested from the kubernetes.io/kubelet-serving
// signer for system:node:<nodeName> in system:nodes, naming the node's
// addresses (its IPs and host names; no request without an IP), kept in
// certDir as kubelet-server-current.pem and renewed at 70–90% of its life.
// kube-controller-manager signs such a request only once someone (an
// operator, an approver controller) approved it; until then the node API
// has no certificate and refuses TLS handshakes. Matches the kubelet's
// --rotate-server-certificates (NewKubeletServerCertificateManager). The
// manager stops with ctx.
func NewServingCertManager(ctx context.Context, client kubernetes.Interface, nodeName string, addresses []v1.NodeAddress, certDir string) (certificate.Manager, error) {
	store, err := certificate.NewFileStore("kubelet-server", certDir, certDir, "", "")
	if err != nil {
		return nil, fmt.Errorf("serving certificate store in %s: %w", certDir, err)
	}
	var hostnames []string
	var ips []net.IP
	for _, a := range addresses {
		switch a.Type {
		case v1.NodeHostName, v1.NodeInternalDNS, v1.NodeExternalDNS:
			hostnames = append(hostnames, a.Address)
		case v1.NodeInternalIP, v1.NodeExternalIP:
			if ip := net.ParseIP(a.Address); ip != nil {
				ips = append(ips, ip)
			}
		}
	}
	m, err := certificate.NewManager(&certificate.Config{
		ClientsetFn: func(*tls.Certificate) (kubernetes.Interface, error) { return client, nil },
		GetTemplate: func() *x509.CertificateRequest {
			if len(ips) == 0 {
				return nil
			}
			return &x509.CertificateRequest{
				Subject:  pkix.Name{CommonName: "system:node:" + nodeName, Organization: []string{"system:nodes"}},
				DNSNames: hostnames, IPAddresses: ips,
			}
		},
		SignerName:       certificatesv1.KubeletServingSignerName,
		GetUsages:        certificate.DefaultKubeletServingGetUsages,
		CertificateStore: store,
	})
	if err != nil {
		return nil, fmt.Errorf("serving certificate manager: %w", err)
	}
	m.Start()
	go func() {
		<-ctx.Done()
		m.Stop()
	}()
	return m, nil
}
