package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
)

// Upload sends r as the file name (a plain name, no slashes) with POST /uploads as
// multipart/form-data, and returns the stored asset; its URL is a job input like any https URL.
// The body is streamed, not held in memory, so r may be a large file.
func (c *ClientWithResponses) Upload(ctx context.Context, name string, r io.Reader) (*Upload, error) {
	if name == "" || strings.ContainsAny(name, `/\`) {
		return nil, fmt.Errorf("client: upload name %q is not a plain file name", name)
	}
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	written := make(chan struct{})
	go func() {
		defer close(written)
		pw.CloseWithError(writeMultipart(mw, name, r))
	}()
	resp, err := c.UploadWithBodyWithResponse(ctx, nil, mw.FormDataContentType(), pr)
	// An answer before the whole body was read (a 401, a 413) stops the writer at its next
	// write; waiting for it means r is no longer read once Upload returns.
	_ = pr.CloseWithError(errors.New("client: upload request ended"))
	<-written
	if err != nil {
		return nil, fmt.Errorf("client: upload %s: %w", name, err)
	}
	if err := ResponseError(resp.HTTPResponse, resp.Body); err != nil {
		return nil, err
	}
	if resp.JSON201 == nil {
		return nil, fmt.Errorf("client: upload %s: answer %d is not an upload", name, resp.StatusCode())
	}
	return &resp.JSON201.Data, nil
}

// UploadFile uploads the file at path under its base name.
func (c *ClientWithResponses) UploadFile(ctx context.Context, path string) (*Upload, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("client: upload: %w", err)
	}
	defer f.Close()
	return c.Upload(ctx, filepath.Base(path), f)
}

// writeMultipart writes the one part the API takes, `file`, typed by the name's extension so the
// asset keeps a useful Content-Type.
func writeMultipart(mw *multipart.Writer, name string, r io.Reader) error {
	ct := mime.TypeByExtension(filepath.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", mime.FormatMediaType("form-data", map[string]string{"name": "file", "filename": name}))
	h.Set("Content-Type", ct)
	part, err := mw.CreatePart(h)
	if err != nil {
		return err
	}
	if _, err := io.Copy(part, r); err != nil {
		return fmt.Errorf("client: read %s: %w", name, err)
	}
	return mw.Close()
}
