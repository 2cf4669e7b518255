package apiserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"go.uber.org/zap"
	certificatesv1 "k8s.io/api/certificates/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/transport"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate"
	"k8s.io/client-go/util/connrotation"

	"github.com/splitlet/splitlet/internal/logctx"
)

// ClientOptions say how sync authenticates to the API server.
type ClientOptions struct {
	// Kubeconfig is sync's --kubeconfig. With BootstrapKubeconfig it is
	// also where the kubeconfig pointing at the issued certificate is
	// written, as the kubelet's.
	Kubeconfig string
	// BootstrapKubeconfig (--bootstrap-kubeconfig), when set and Kubeconfig
	// holds no valid client certificate, authenticates a
	// CertificateSigningRequest for the node's client certificate (TLS
	// bootstrap); the certificate is then rotated before it expires.
	BootstrapKubeconfig string
	// CertDir keeps the issued certificate and key
	// (kubelet-client-current.pem), so a restart needs no new request.
	CertDir string
	// NodeName is the certificate's identity: system:node:<NodeName> in
	// system:nodes.
	NodeName string
}

// NewClient builds a clientset from a kubeconfig file.
func NewClient(kubeconfig string) (kubernetes.Interface, error) {
	rc, err := loadRESTConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return newClientset(rc)
}

// NewNodeClient builds sync's clientset. Without a bootstrap kubeconfig it
// is NewClient(opts.Kubeconfig). With one it follows the kubelet
// (bootstrap.LoadClientConfig, NewKubeletClientCertificateManager,
// UpdateTransport): a still-valid Kubeconfig is used as it is; otherwise a
// Kubeconfig pointing at CertDir's kubelet-client-current.pem is written and
// a certificate manager requests that certificate with the bootstrap
// credentials (signer kubernetes.io/kube-apiserver-client-kubelet, which
// kube-controller-manager approves for system:bootstrappers and signs).
// The manager rotates the certificate at 70–90% of its life, requesting
// with the current one; the clientset's connections present the current
// certificate and are closed when it changes. Until the first certificate
// is issued, requests fail as unauthenticated and their callers retry. The
// manager stops with ctx.
func NewNodeClient(ctx context.Context, opts ClientOptions) (kubernetes.Interface, error) {
	if opts.BootstrapKubeconfig == "" {
		return NewClient(opts.Kubeconfig)
	}
	store, err := certificate.NewFileStore("kubelet-client", opts.CertDir, opts.CertDir, "", "")
	if err != nil {
		return nil, fmt.Errorf("client certificate store in %s: %w", opts.CertDir, err)
	}
	// certConfig asks for certificates; userConfig is what the node uses.
	var certConfig, userConfig *rest.Config
	if clientConfigValid(opts.Kubeconfig) {
		if certConfig, err = loadRESTConfig(opts.Kubeconfig); err != nil {
			return nil, err
		}
		userConfig = rest.CopyConfig(certConfig)
	} else {
		if certConfig, err = loadRESTConfig(opts.BootstrapKubeconfig); err != nil {
			return nil, fmt.Errorf("bootstrap %w", err)
		}
		userConfig = rest.AnonymousClientConfig(certConfig)
		userConfig.CertFile, userConfig.KeyFile = store.CurrentPath(), store.CurrentPath()
		if err := writeKubeconfig(userConfig, opts.Kubeconfig); err != nil {
			return nil, err
		}
		logctx.From(ctx).Info("no valid client certificate: requesting one with the bootstrap credentials",
			zap.String("kubeconfig", opts.Kubeconfig), zap.String("certificate", store.CurrentPath()))
	}
	m, err := certificate.NewManager(&certificate.Config{
		ClientsetFn: func(current *tls.Certificate) (kubernetes.Interface, error) {
			if current != nil {
				return newClientset(userConfig)
			}
			return newClientset(certConfig)
		},
		Template: &x509.CertificateRequest{Subject: pkix.Name{
			CommonName: "system:node:" + opts.NodeName, Organization: []string{"system:nodes"}}},
		SignerName:       certificatesv1.KubeAPIServerClientKubeletSignerName,
		GetUsages:        certificate.DefaultKubeletClientGetUsages,
		CertificateStore: store,
	})
	if err != nil {
		return nil, fmt.Errorf("client certificate manager: %w", err)
	}
	m.Start()
	go func() {
		<-ctx.Done()
		m.Stop()
	}()
	rc, err := rotatingTransport(ctx, userConfig, m)
	if err != nil {
		return nil, err
	}
	return newClientset(rc)
}

// rotatingTransport returns cfg with a transport that presents m's current
// certificate and closes every connection when it changes, so the next
// request authenticates with the new one. Matches the kubelet's
// updateTransport (checked every 10 s).
func rotatingTransport(ctx context.Context, cfg *rest.Config, m certificate.Manager) (*rest.Config, error) {
	anon := rest.AnonymousClientConfig(cfg)
	tlsConfig, err := rest.TLSConfigFor(anon)
	if err != nil {
		return nil, fmt.Errorf("TLS config of %s: %w", cfg.Host, err)
	}
	if tlsConfig == nil {
		return nil, fmt.Errorf("API server %s: client certificates need https", cfg.Host)
	}
	tlsConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if c := m.Current(); c != nil {
			return c, nil
		}
		// No certificate yet: the request goes unauthenticated.
		return &tls.Certificate{}, nil
	}
	dialer := connrotation.NewDialer((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext)
	anon.Transport = utilnet.SetTransportDefaults(&http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSHandshakeTimeout: 10 * time.Second,
		TLSClientConfig:     tlsConfig,
		MaxIdleConnsPerHost: 25,
		DialContext:         dialer.DialContext,
	})
	// The transport carries the TLS settings; client-go refuses both.
	anon.TLSClientConfig = rest.TLSClientConfig{}
	go func() {
		last := m.Current()
		tick := time.NewTicker(10 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			// The manager keeps one *tls.Certificate until it rotates.
			cur := m.Current()
			if cur == nil || cur == last {
				continue
			}
			if last != nil {
				logctx.From(ctx).Info("client certificate rotated: closing connections")
				dialer.CloseAll()
			}
			last = cur
		}
	}()
	return anon, nil
}

// clientConfigValid says whether path is a kubeconfig whose client
// certificate can be loaded and has not expired. Matches the kubelet's
// isClientConfigStillValid.
func clientConfigValid(path string) bool {
	if _, err := os.Stat(path); err != nil {
		return false
	}
	rc, err := loadRESTConfig(path)
	if err != nil {
		return false
	}
	tc, err := rc.TransportConfig()
	if err != nil {
		return false
	}
	if _, err := transport.TLSConfigFor(tc); err != nil {
		return false
	}
	certs, err := certutil.ParseCertsPEM(tc.TLS.CertData)
	if err != nil || len(certs) == 0 {
		return false
	}
	for _, c := range certs {
		if time.Now().After(c.NotAfter) {
			return false
		}
	}
	return true
}

// writeKubeconfig writes a kubeconfig for cfg's server and CA with the
// client certificate and key in cfg's files. Matches the kubelet's
// writeKubeconfigFromBootstrapping.
func writeKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{"default-cluster": {
			Server: cfg.Host, InsecureSkipTLSVerify: cfg.Insecure,
			CertificateAuthority: cfg.CAFile, CertificateAuthorityData: cfg.CAData, TLSServerName: cfg.ServerName}},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{"default-auth": {
			ClientCertificate: cfg.CertFile, ClientKey: cfg.KeyFile}},
		Contexts: map[string]*clientcmdapi.Context{"default-context": {
			Cluster: "default-cluster", AuthInfo: "default-auth", Namespace: "default"}},
		CurrentContext: "default-context",
	}
	if err := clientcmd.WriteToFile(kc, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}

func loadRESTConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		return nil, errors.New("kubeconfig: no path")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	return rc, nil
}

func newClientset(rc *rest.Config) (kubernetes.Interface, error) {
	rc = rest.CopyConfig(rc)
	rc.UserAgent = "splitlet-sync"
	// The kubelet's kubeAPIQPS and kubeAPIBurst defaults: client-go's own
	// (5, 10) throttle a node running many pods into minutes-late statuses.
	rc.QPS, rc.Burst = KubeAPIQPS, KubeAPIBurst
	return kubernetes.NewForConfig(rc)
}
