// Package pullcreds turns a pod's image pull secrets into the credentials a
// pull of one image may use, as the kubelet's credential provider keyring
// does (credentialprovider.BasicDockerKeyring, secrets.MakeDockerKeyring),
// and remembers which credentials pulled which image, so that a pod without
// them is made to pull again rather than run another tenant's private image
// (the kubelet's image pull manager, KubeletEnsureSecretPulledImages, on by
// default since v1.35).
package pullcreds

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/distribution/reference"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// SecretRef names the Secret a credential came from; its UID tells a
// re-created Secret of the same name apart.
type SecretRef struct {
	UID       string `json:"uid"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// Credential is one registry login a pull may try.
type Credential struct {
	// Auth goes into the CRI PullImageRequest.
	Auth *runtimeapi.AuthConfig
	// Secret is where the login came from.
	Secret SecretRef
	// Hash identifies the login's content (user, password, e-mail), as
	// the kubelet's hashAuthConfig: the same login in two Secrets has the
	// same hash.
	Hash string
}

// Keyring maps registry locations (a host, optionally with a path prefix
// and glob parts in the host: "*.example.com", "registry:5000/team") to
// credentials.
type Keyring struct {
	// index holds the locations, reverse-sorted so that a longer path
	// under the same host comes before the host alone, as in the kubelet.
	index []string
	creds map[string][]Credential
}

// dockerConfigEntry is one location's login in a .dockercfg or a
// .dockerconfigjson's "auths".
type dockerConfigEntry struct {
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	Email    string `json:"email,omitempty"`
	Auth     string `json:"auth,omitempty"`
}

// FromSecrets builds the keyring of the pod's pull secrets: those of type
// kubernetes.io/dockerconfigjson (key .dockerconfigjson, {"auths": {...}})
// and kubernetes.io/dockercfg (key .dockercfg, the locations at top
// level). Other Secrets are ignored, as the kubelet's
// secretsToTrackedDockerConfigs ignores them; a Secret of the right type
// whose content does not parse is an error naming it.
func FromSecrets(secrets []*v1.Secret) (*Keyring, error) {
	k := &Keyring{creds: map[string][]Credential{}}
	for _, s := range secrets {
		var entries map[string]dockerConfigEntry
		switch data := s.Data; {
		case s.Type == v1.SecretTypeDockerConfigJson && len(data[v1.DockerConfigJsonKey]) > 0:
			var cfg struct {
				Auths map[string]dockerConfigEntry `json:"auths"`
			}
			if err := json.Unmarshal(data[v1.DockerConfigJsonKey], &cfg); err != nil {
				return nil, fmt.Errorf("secret %q: %s: %w", s.Name, v1.DockerConfigJsonKey, err)
			}
			entries = cfg.Auths
		case s.Type == v1.SecretTypeDockercfg && len(data[v1.DockerConfigKey]) > 0:
			if err := json.Unmarshal(data[v1.DockerConfigKey], &entries); err != nil {
				return nil, fmt.Errorf("secret %q: %s: %w", s.Name, v1.DockerConfigKey, err)
			}
		default:
			continue
		}
		ref := SecretRef{UID: string(s.UID), Namespace: s.Namespace, Name: s.Name}
		if err := k.add(ref, entries); err != nil {
			return nil, fmt.Errorf("secret %q: %w", s.Name, err)
		}
	}
	slices.Sort(k.index)
	k.index = slices.Compact(k.index)
	slices.Reverse(k.index)
	return k, nil
}

// add files each location's login under its key: the host, plus the path
// when there is one other than "/", with a leading /v1/ or /v2/ dropped
// (the kubelet's BasicDockerKeyring.Add, after docker's ResolveAuthConfig).
// An "auth" field holds base64("user:password") and wins over the separate
// fields, as in the kubelet's DockerConfigEntry.UnmarshalJSON.
func (k *Keyring) add(ref SecretRef, entries map[string]dockerConfigEntry) error {
	for loc, e := range entries {
		user, password := e.Username, e.Password
		if e.Auth != "" {
			var err error
			if user, password, err = decodeAuth(e.Auth); err != nil {
				return fmt.Errorf("auths[%q].auth: %w", loc, err)
			}
		}
		value := loc
		if !strings.HasPrefix(value, "https://") && !strings.HasPrefix(value, "http://") {
			value = "https://" + value
		}
		parsed, err := url.Parse(value)
		if err != nil {
			// The kubelet logs and skips such an entry.
			continue
		}
		path := parsed.Path
		if strings.HasPrefix(path, "/v1/") || strings.HasPrefix(path, "/v2/") {
			path = path[3:]
		}
		key := parsed.Host
		if path != "" && path != "/" {
			key += path
		}
		k.creds[key] = append(k.creds[key], Credential{
			Auth:   &runtimeapi.AuthConfig{Username: user, Password: password},
			Secret: ref,
			Hash:   hashLogin(user, password, e.Email),
		})
		k.index = append(k.index, key)
	}
	return nil
}

// decodeAuth splits base64("user:password"), padded or not.
func decodeAuth(field string) (string, string, error) {
	enc := base64.RawStdEncoding
	if strings.HasSuffix(strings.TrimSpace(field), "=") {
		enc = base64.StdEncoding
	}
	decoded, err := enc.DecodeString(field)
	if err != nil {
		return "", "", err
	}
	user, password, ok := strings.Cut(string(decoded), ":")
	if !ok {
		return "", "", errors.New("must be base64(username:password)")
	}
	return user, password, nil
}

// hashLogin is the SHA-256 of the login's JSON: what the kubelet's
// hashAuthConfig hashes (its AuthConfig with user, password and e-mail).
func hashLogin(user, password, email string) string {
	b, _ := json.Marshal(struct {
		Username string `json:"username,omitempty"`
		Password string `json:"password,omitempty"`
		Email    string `json:"email,omitempty"`
	}{user, password, email})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// defaultRegistryHost is the key docker writes for Docker Hub
// ("https://index.docker.io/v1/" once the /v1/ is dropped).
const defaultRegistryHost = "index.docker.io"

// Lookup returns the credentials to try, in order, for a pull of image
// (with or without tag or digest). Every location that matches the image's
// repository contributes, the more specific first; when none does and the
// image lives on Docker Hub, the index.docker.io login applies. Matches the
// kubelet's BasicDockerKeyring.Lookup on the repository its
// makeLookupPullCredentialsFunc derives (parsers.ParseImageName).
func (k *Keyring) Lookup(image string) []Credential {
	if k == nil || len(k.index) == 0 {
		return nil
	}
	repo, err := Repository(image)
	if err != nil {
		return nil
	}
	var out []Credential
	for _, key := range k.index {
		if urlsMatch(key, repo) {
			out = append(out, k.creds[key]...)
		}
	}
	if len(out) == 0 && isDefaultRegistry(repo) {
		out = append(out, k.creds[defaultRegistryHost]...)
	}
	return out
}

// Repository is image's repository in docker's normalized form
// ("busybox:1.36" -> "docker.io/library/busybox"), what credentials and
// pull records are keyed by.
func Repository(image string) (string, error) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return "", fmt.Errorf("image %q: %w", image, err)
	}
	return named.Name(), nil
}

// isDefaultRegistry says whether repo pulls from Docker Hub (the kubelet's
// isDefaultRegistryMatch): no host part, or docker.io / index.docker.io.
func isDefaultRegistry(repo string) bool {
	first, _, found := strings.Cut(repo, "/")
	if first == "" {
		return false
	}
	if !found || first == "docker.io" || first == defaultRegistryHost {
		return true
	}
	return !strings.ContainsAny(first, ".:")
}

// urlsMatch reports whether the location glob covers target: the same
// port, the same number of host labels each matching as a filepath glob,
// and glob's path a prefix of target's. The kubelet's URLsMatchStr.
func urlsMatch(glob, target string) bool {
	g, err := url.Parse("https://" + glob)
	if err != nil {
		return false
	}
	t, err := url.Parse("https://" + target)
	if err != nil {
		return false
	}
	gParts, gPort := splitHost(g.Host)
	tParts, tPort := splitHost(t.Host)
	if gPort != tPort || len(gParts) != len(tParts) || !strings.HasPrefix(t.Path, g.Path) {
		return false
	}
	for i := range gParts {
		if ok, err := filepath.Match(gParts[i], tParts[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

// splitHost splits host[:port] into its dot-separated labels and the port.
func splitHost(hostport string) ([]string, string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	return strings.Split(host, "."), port
}
