package pullcreds

import (
	"fmt"
	"slices"
	"sync"

	"github.com/splitlet/splitlet/services/sync/internal/jsonfile"
)

// Records remembers which credentials pulled each image, so that a pod may
// use an image already on the node only if it could have pulled it itself.
// It is the kubelet's image pull manager (pullmanager.PullManager) under
// the default ImagePullCredentialsVerificationPolicy,
// NeverVerifyPreloadedImages: images sync never pulled are usable by
// every pod; an image it pulled anonymously is usable by every pod; an
// image it pulled with a Secret's login only by pods that present the same
// login (or the same, possibly rotated, Secret), every other pod pulls it
// again with its own credentials.
//
// Records are kept in one JSON file, rewritten atomically on every change.
// Records is safe for concurrent use.
type Records struct {
	path string

	mu   sync.Mutex
	data recordsFile
}

// recordsFile is the file's content.
type recordsFile struct {
	// Pulled maps an image ID (the runtime's image ref) to the
	// credentials that pulled it, per repository name.
	Pulled map[string]map[string]*access `json:"pulled"`
	// Intents counts pulls started and not finished, by image as the pod
	// names it: an image being pulled, or whose pull was cut short by a
	// crash, counts as pulled by sync.
	Intents map[string]int `json:"intents"`
	// Distrust is set once the file was found unreadable: which images
	// sync had pulled is lost, so every image present without a record
	// counts as pulled with unknown credentials and is verified, as the
	// kubelet forces a pull when it cannot read an image's record. It
	// stays set; an operator who knows the node's images are all public
	// may delete the file.
	Distrust bool `json:"distrust,omitempty"`
}

// access is who may use an image of one repository.
type access struct {
	// NodeAccessible: pulled without any Secret's login.
	NodeAccessible bool `json:"nodeAccessible,omitempty"`
	// Secrets whose logins pulled it.
	Secrets []SecretRecord `json:"secrets,omitempty"`
}

// SecretRecord is a Secret and the hash of the login it held.
type SecretRecord struct {
	SecretRef
	Hash string `json:"hash"`
}

// maxSecretsPerImage bounds what a match adds to a record (the kubelet's
// writeRecordWhileMatchingLimit); a pull always records its Secret.
const maxSecretsPerImage = 100

// OpenRecords reads the records at path, or starts empty when there is no
// such file. An unreadable or corrupt file is returned as an error beside
// usable Records that verify every present image (and are rewritten from
// the next change): the node keeps working, and no pod gets an image it
// could not pull on the strength of a lost record.
func OpenRecords(path string) (*Records, error) {
	r := &Records{path: path, data: recordsFile{Pulled: map[string]map[string]*access{}, Intents: map[string]int{}}}
	var data recordsFile
	err := jsonfile.Load(path, &data)
	if err == nil {
		if data.Pulled != nil {
			r.data.Pulled = data.Pulled
		}
		if data.Intents != nil {
			r.data.Intents = data.Intents
		}
		r.data.Distrust = data.Distrust
		return r, nil
	}
	r.data.Distrust = true
	return r, fmt.Errorf("image pull records %s: %w (every image present is verified with the pod's credentials until it is pulled again)", path, err)
}

// MustPull says whether a pod must pull image although the runtime holds it
// as imageRef, given the credentials the pod's pull secrets offer for it
// (podCreds is called only when the answer depends on them). Matches the
// kubelet's PullManager.MustAttemptImagePull; a pod whose Secret matches by
// name and UID but holds a new login (a rotated Secret), or holds the same
// login under another Secret, is let through and remembered.
func (r *Records) MustPull(image, imageRef string, podCreds func() ([]Credential, error)) (bool, error) {
	repo, err := Repository(image)
	if err != nil {
		return true, nil
	}
	r.mu.Lock()
	byRepo, pulled := r.data.Pulled[imageRef]
	var known []SecretRecord
	must, decided := true, true
	switch acc := byRepo[repo]; {
	case !pulled:
		// Preloaded (never pulled by sync) unless a pull is under way
		// or the records were lost.
		must = r.data.Intents[image] > 0 || r.data.Distrust
	case acc == nil:
	case acc.NodeAccessible:
		must = false
	default:
		known, decided = slices.Clone(acc.Secrets), false
	}
	r.mu.Unlock()
	if decided {
		return must, nil
	}
	// The pod's credentials may take an API read: not under the lock.
	creds, err := podCreds()
	if err != nil {
		return true, err
	}
	for _, c := range creds {
		for _, s := range known {
			if c.Hash == s.Hash || c.Secret == s.SecretRef {
				return false, r.remember(imageRef, repo, SecretRecord{c.Secret, c.Hash})
			}
		}
	}
	return true, nil
}

// remember adds rec to the image's record if it is not there yet and the
// record has room.
func (r *Records) remember(imageRef, repo string, rec SecretRecord) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	acc := r.data.Pulled[imageRef][repo]
	if acc == nil || slices.Contains(acc.Secrets, rec) || len(acc.Secrets) >= maxSecretsPerImage {
		return nil
	}
	acc.Secrets = append(acc.Secrets, rec)
	return r.saveLocked()
}

// StartPull records that a pull of image begins; the record is on disk
// before the pull is sent.
func (r *Records) StartPull(image string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.data.Intents[image]++
	return r.saveLocked()
}

// EndPull records the end of a pull StartPull announced. After a success
// (imageRef set) the image is recorded as pulled with cred, nil for a pull
// without credentials.
func (r *Records) EndPull(image, imageRef string, cred *Credential) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.data.Intents[image] <= 1 {
		delete(r.data.Intents, image)
	} else {
		r.data.Intents[image]--
	}
	if imageRef == "" {
		return r.saveLocked()
	}
	repo, err := Repository(image)
	if err != nil {
		return r.saveLocked()
	}
	byRepo := r.data.Pulled[imageRef]
	if byRepo == nil {
		byRepo = map[string]*access{}
		r.data.Pulled[imageRef] = byRepo
	}
	acc := byRepo[repo]
	if acc == nil {
		acc = &access{}
		byRepo[repo] = acc
	}
	if cred == nil {
		acc.NodeAccessible = true
	} else if rec := (SecretRecord{cred.Secret, cred.Hash}); !slices.Contains(acc.Secrets, rec) {
		acc.Secrets = append(acc.Secrets, rec)
	}
	return r.saveLocked()
}

// saveLocked writes the file anew (jsonfile.Save: a crash leaves the old
// file or the new one).
func (r *Records) saveLocked() error {
	if r.path == "" {
		return nil
	}
	if err := jsonfile.Save(r.path, r.data); err != nil {
		return fmt.Errorf("image pull records: %w", err)
	}
	return nil
}
