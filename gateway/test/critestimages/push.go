package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// registryClient pushes images over the registry HTTP API v2 (the distribution
// spec's push flow: HEAD the blob, else POST an upload and PUT it whole; then PUT
// the manifest). Plain HTTP and no auth: it only talks to the local registry.
type registryClient struct {
	base string // http://HOST:PORT
	http *http.Client
}

// push uploads img as repo:tag and returns the manifest digest.
func (c *registryClient) push(ctx context.Context, repo, tag string, img image) (string, error) {
	blobs := []blob{img.config}
	for _, l := range img.layers {
		blobs = append(blobs, l.blob)
	}
	for _, b := range blobs {
		if err := c.pushBlob(ctx, repo, b); err != nil {
			return "", fmt.Errorf("blob %s: %w", b.digest, err)
		}
	}
	u := fmt.Sprintf("%s/v2/%s/manifests/%s", c.base, repo, tag)
	resp, err := c.do(ctx, http.MethodPut, u, img.manifest.mediaType, img.manifest.data)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("PUT manifest: %s", resp.Status)
	}
	if got := resp.Header.Get("Docker-Content-Digest"); got != "" && got != img.manifest.digest {
		return "", fmt.Errorf("registry stored manifest as %s, want %s", got, img.manifest.digest)
	}
	return img.manifest.digest, nil
}

func (c *registryClient) pushBlob(ctx context.Context, repo string, b blob) error {
	resp, err := c.do(ctx, http.MethodHead, fmt.Sprintf("%s/v2/%s/blobs/%s", c.base, repo, b.digest), "", nil)
	if err != nil {
		return err
	}
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	resp, err = c.do(ctx, http.MethodPost, fmt.Sprintf("%s/v2/%s/blobs/uploads/", c.base, repo), "", nil)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("start upload: %s", resp.Status)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		return fmt.Errorf("upload location: %w", err)
	}
	base, err := url.Parse(c.base)
	if err != nil {
		return err
	}
	// The location may be relative and carries upload state in its query.
	loc = base.ResolveReference(loc)
	q := loc.Query()
	q.Set("digest", b.digest)
	loc.RawQuery = q.Encode()
	resp, err = c.do(ctx, http.MethodPut, loc.String(), "application/octet-stream", b.data)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("finish upload: %s", resp.Status)
	}
	return nil
}

// do sends one request and drains its body; callers only need status and headers.
func (c *registryClient) do(ctx context.Context, method, u, contentType string, body []byte) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, r)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return nil, err
	}
	return resp, nil
}
