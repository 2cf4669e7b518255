package nodeapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/util/wait"
	apiserverconfig "k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"

	"github.com/splitlet/splitlet/internal/logctx"
)

// The kubelet's defaults for its webhook authenticator and authorizer
// (KubeletConfiguration v1beta1: authentication.webhook.cacheTTL,
// authorization.webhook.cacheAuthorizedTTL and cacheUnauthorizedTTL).
const (
	authnCacheTTL        = 2 * time.Minute
	authzAllowedCacheTTL = 5 * time.Minute
	authzDeniedCacheTTL  = 30 * time.Second
)

// webhookRetryBackoff is k8s.io/apiserver's DefaultAuthWebhookRetryBackoff,
// which the kubelet passes to both webhooks (copied as values: its package
// would pull the whole generic API server into sync).
func webhookRetryBackoff() *wait.Backoff {
	return &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
}

// Auth decides who a request is and whether they may make it: the
// kubelet's AuthInterface without the CA provider, which the TLS layer does
// not need here (client certificates are requested, not verified, in the
// handshake and verified by the authenticator).
type Auth interface {
	// AuthenticateRequest is authenticator.Request's: ok false (or an
	// error) when the request carries no credential that authenticates.
	AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error)
	// Authorize is authorizer.Authorizer's: an error when no decision
	// could be made.
	Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error)
}

// ErrNoAuth means the node API has no way to authenticate anyone: neither
// an API server for TokenReview nor a client CA.
var ErrNoAuth = errors.New("the node API needs --kubeconfig (TokenReview and SubjectAccessReview, as the kubelet's webhook authentication and authorization) or --client-ca-file (client certificates only, every verified client allowed everything)")

// AuthOptions configure BuildAuth.
type AuthOptions struct {
	// Client is the API server's client for TokenReview and
	// SubjectAccessReview; nil leaves client certificates as the only
	// credential, and every verified client is allowed everything (the
	// kubelet's --authorization-mode=AlwaysAllow).
	Client kubernetes.Interface
	// ClientCAFile verifies client certificates (the kubelet's
	// --client-ca-file), re-read when it changes; empty accepts none.
	ClientCAFile string
	// Anonymous lets requests without credentials through as
	// system:anonymous, to be authorized (the kubelet's --anonymous-auth).
	// Refused without Client: nothing would then stop them.
	Anonymous bool
}

// BuildAuth builds the authenticator and authorizer the kubelet's BuildAuth
// builds (cmd/kubelet/app/auth.go), from k8s.io/apiserver's delegating
// factories: x509 client certificates against ClientCAFile, bearer tokens
// through TokenReview (cached 2 min), decisions through SubjectAccessReview
// (allowed cached 5 min, denied 30 s). run reloads the client CA until ctx
// ends. Fails with ErrNoAuth when nothing could authenticate a request.
func BuildAuth(opts AuthOptions) (auth Auth, run func(ctx context.Context), err error) {
	if opts.Client == nil && opts.ClientCAFile == "" {
		return nil, nil, ErrNoAuth
	}
	if opts.Client == nil && opts.Anonymous {
		return nil, nil, fmt.Errorf("anonymous requests need --kubeconfig to be authorized: without it every anonymous request would be allowed")
	}
	cfg := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous: &apiserverconfig.AnonymousAuthConfig{Enabled: opts.Anonymous},
		CacheTTL:  authnCacheTTL,
	}
	var ca *dynamiccertificates.DynamicFileCAContent
	if opts.ClientCAFile != "" {
		ca, err = dynamiccertificates.NewDynamicCAContentFromFile("client-ca-bundle", opts.ClientCAFile)
		if err != nil {
			return nil, nil, fmt.Errorf("--client-ca-file: %w", err)
		}
		cfg.ClientCertificateCAContentProvider = ca
	}
	var authz authorizer.Authorizer = authorizerfactory.NewAlwaysAllowAuthorizer()
	if opts.Client != nil {
		cfg.TokenAccessReviewClient = opts.Client.AuthenticationV1()
		cfg.WebhookRetryBackoff = webhookRetryBackoff()
		authz, err = authorizerfactory.DelegatingAuthorizerConfig{
			SubjectAccessReviewClient: opts.Client.AuthorizationV1(),
			AllowCacheTTL:             authzAllowedCacheTTL,
			DenyCacheTTL:              authzDeniedCacheTTL,
			WebhookRetryBackoff:       webhookRetryBackoff(),
		}.New()
		if err != nil {
			return nil, nil, fmt.Errorf("node API authorizer: %w", err)
		}
	}
	authn, _, err := cfg.New()
	if err != nil {
		return nil, nil, fmt.Errorf("node API authenticator: %w", err)
	}
	run = func(ctx context.Context) {
		if ca != nil {
			ca.Run(ctx, 1)
		}
	}
	return authPair{authn, authz}, run, nil
}

type authPair struct {
	authenticator.Request
	authorizer.Authorizer
}

var _ Auth = authPair{}

// The kubelet's paths that map to their own subresource (server.go's path
// constants, with healthz, configz, statusz and flagz from their packages).
const (
	statsPath = "/stats/"
	// statsSummaryPath and resourceMetricsPath are below statsPath and
	// metricsPath, authorized as them.
	statsSummaryPath    = "/stats/summary"
	resourceMetricsPath = "/metrics/resource"
	proberMetricsPath   = "/metrics/probes"
	metricsPath         = "/metrics"
	logsPath            = "/logs/"
	checkpointPath      = "/checkpoint/"
	podsPath            = "/pods"
	runningPodsPath     = "/runningpods/"
	healthzPath         = "/healthz"
	configzPath         = "/configz"
	statuszPath         = "/statusz"
	flagzPath           = "/flagz"
)

// isSubpath is the kubelet's: path itself or anything below it.
func isSubpath(subpath, path string) bool {
	path = strings.TrimSuffix(path, "/")
	return subpath == path || (strings.HasPrefix(subpath, path) && subpath[len(path)] == '/')
}

// requestAttributes are the authorization attributes of a request to the
// node API: verb from the HTTP method, resource nodes named nodeName, and
// the subresource(s) of the path; the request is allowed when any of them
// is. Matches the kubelet's nodeAuthorizerAttributesGetter.
// GetRequestAttributes with KubeletFineGrainedAuthz (GA, locked on, in
// v1.36): /pods, /runningpods/, /healthz and /configz are also allowed by
// nodes/proxy; /stats/ is nodes/stats, /metrics nodes/metrics, /logs/
// nodes/log; everything else, /containerLogs included, nodes/proxy.
func requestAttributes(nodeName string, u user.Info, r *http.Request) []authorizer.Attributes {
	verb := ""
	switch r.Method {
	case http.MethodPost:
		verb = "create"
	case http.MethodGet:
		verb = "get"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
	}
	p := r.URL.Path
	var subresources []string
	switch {
	case isSubpath(p, podsPath):
		subresources = append(subresources, "pods")
	case isSubpath(p, healthzPath):
		subresources = append(subresources, "healthz")
	case isSubpath(p, configzPath):
		subresources = append(subresources, "configz")
	case isSubpath(p, runningPodsPath):
		subresources = append(subresources, "pods")
	}
	switch {
	case isSubpath(p, statsPath):
		subresources = append(subresources, "stats")
	case isSubpath(p, metricsPath):
		subresources = append(subresources, "metrics")
	case isSubpath(p, logsPath):
		subresources = append(subresources, "log")
	case isSubpath(p, checkpointPath):
		subresources = append(subresources, "checkpoint")
	case isSubpath(p, statuszPath):
		subresources = append(subresources, "statusz")
	case isSubpath(p, flagzPath):
		subresources = append(subresources, "configz")
	default:
		subresources = append(subresources, "proxy")
	}
	attrs := make([]authorizer.Attributes, 0, len(subresources))
	for _, sub := range subresources {
		attrs = append(attrs, authorizer.AttributesRecord{
			User: u, Verb: verb, APIVersion: "v1", Resource: "nodes", Subresource: sub,
			Name: nodeName, ResourceRequest: true, Path: p,
		})
	}
	return attrs
}

// withAuth authenticates and authorizes every request before next sees it,
// with the kubelet's answers: 401 "Unauthorized" for no (or a failing)
// credential, 403 naming the user, verb and subresources when no attribute
// is allowed, 500 when the authorizer fails. Matches the kubelet's
// InstallAuthFilter.
func withAuth(auth Auth, nodeName string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log := logctx.From(r.Context())
		resp, ok, err := auth.AuthenticateRequest(r)
		if err != nil {
			log.Info("unable to authenticate the request", zap.Error(err))
		}
		if err != nil || !ok {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		attrs := requestAttributes(nodeName, resp.User, r)
		subresources := make([]string, 0, len(attrs))
		for _, a := range attrs {
			subresources = append(subresources, a.GetSubresource())
			decision, _, err := auth.Authorize(r.Context(), a)
			if err != nil {
				log.Info("authorization error", zap.String("user", a.GetUser().GetName()), zap.String("verb", a.GetVerb()), zap.String("subresource", a.GetSubresource()), zap.Error(err))
				http.Error(w, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=%s, subresource=%s)",
					a.GetUser().GetName(), a.GetVerb(), a.GetResource(), a.GetSubresource()), http.StatusInternalServerError)
				return
			}
			if decision == authorizer.DecisionAllow {
				next.ServeHTTP(w, r.WithContext(logctx.With(r.Context(), log.With(zap.String("user", resp.User.GetName())))))
				return
			}
		}
		log.Debug("forbidden", zap.String("user", resp.User.GetName()), zap.String("verb", attrs[0].GetVerb()), zap.Strings("subresources", subresources))
		http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=%s, subresource(s)=%v)",
			resp.User.GetName(), attrs[0].GetVerb(), attrs[0].GetResource(), subresources), http.StatusForbidden)
	})
}
