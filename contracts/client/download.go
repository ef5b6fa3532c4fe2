package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// Download saves an output file of a job into dir under its path (output.files[].path), creating
// dir, and returns the path written. The signed URL is the access check, so the API key is not
// sent with it. A path that would leave dir is refused: the answer of a server is not trusted to
// name files on this machine. The file appears whole or not at all (written aside, then renamed).
func (c *ClientWithResponses) Download(ctx context.Context, f File, dir string) (string, error) {
	if !filepath.IsLocal(f.Path) {
		return "", fmt.Errorf("client: download: output path %q is not a local file name", f.Path)
	}
	dest := filepath.Join(dir, f.Path)
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return "", fmt.Errorf("client: download %s: %w", f.Path, err)
	}
	target := f.URL
	if strings.EqualFold(filepath.Ext(f.Path), ".m3u8") {
		// A playlist as written, naming its segments relatively, so that the copy plays from
		// disk; the service otherwise re-signs the names for players.
		if u, err := url.Parse(target); err == nil {
			q := u.Query()
			q.Set("raw", "1")
			u.RawQuery = q.Encode()
			target = u.String()
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return "", fmt.Errorf("client: download %s: %w", f.Path, err)
	}
	resp, err := c.doer().Do(req)
	if err != nil {
		return "", fmt.Errorf("client: download %s: %w", f.Path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return "", fmt.Errorf("client: download %s: %w", f.Path, ResponseError(resp, body))
	}
	tmp, err := os.CreateTemp(filepath.Dir(dest), ".download-*")
	if err != nil {
		return "", fmt.Errorf("client: download %s: %w", f.Path, err)
	}
	_, err = io.Copy(tmp, resp.Body)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dest)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("client: download %s: %w", f.Path, err)
	}
	return dest, nil
}

// doer is the HTTP client the generated client sends with.
func (c *ClientWithResponses) doer() HttpRequestDoer {
	if gc, ok := c.ClientInterface.(*Client); ok && gc.Client != nil {
		return gc.Client
	}
	return http.DefaultClient
}
