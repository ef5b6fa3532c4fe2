package httpapi

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"mime"
	"mime/multipart"
	"net/http"

	"github.com/uptrace/bunrouter"

	"github.com/mediajobs/mediajobs/adapters/mediatype"
	"github.com/mediajobs/mediajobs/core/asset"
	"github.com/mediajobs/mediajobs/core/idempotency"
	"github.com/mediajobs/mediajobs/core/problem"
)

// uploaded is the answer of POST /uploads.
type uploaded struct {
	ID          string `json:"id"`
	URL         string `json:"url"`
	Name        string `json:"name"`
	ContentType string `json:"contentType"`
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256"`
}

func (a *api) uploadedOf(as asset.Asset) uploaded {
	return uploaded{ID: as.ID, URL: a.uc.Uploads.URL(as.ID), Name: as.Name, ContentType: as.ContentType,
		Size: as.Size, SHA256: as.SHA256}
}

// upload stores the request's file: a raw body (its Content-Type, its name from ?name= or
// X-Filename) or the `file` field of a multipart/form-data body. Bytes stream to the blob
// store; nothing is buffered whole.
func (a *api) upload(w http.ResponseWriter, req bunrouter.Request) error {
	if req.ContentLength > a.opts.MaxUploadBody {
		return problem.Reject(problem.CodePayloadTooLarge, "upload exceeds the %d byte limit", a.uc.Uploads.MaxUpload())
	}
	if err := onlyParam(req.URL.Query(), "name"); err != nil {
		return err
	}
	req.Body = http.MaxBytesReader(w, req.Body, a.opts.MaxUploadBody)
	ct := req.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if ct != "" && err != nil {
		return problem.Reject(problem.CodeValidation, "Content-Type %q is not a media type", ct)
	}
	var (
		name, fileType string
		body           io.Reader
	)
	if mt == "multipart/form-data" {
		name, fileType, body, err = multipartFile(req.Request)
		if err != nil {
			return err
		}
	} else {
		name = req.URL.Query().Get("name")
		if name == "" {
			name = req.Header.Get("X-Filename")
		}
		fileType, body = ct, req.Body
		if mt == "application/octet-stream" {
			fileType = ""
		}
	}
	if name != "" {
		if err := asset.CheckName(name); err != nil {
			return err
		}
	}
	br := bufio.NewReader(body)
	if _, err := br.Peek(1); errors.Is(err, io.EOF) {
		return problem.Reject(problem.CodeValidation, "the upload is empty")
	} else if err != nil {
		return readFailure(err)
	}
	// The client's Content-Type only chose how the body is read: the stored type is sniffed
	// from the bytes, so an upload is never served as something it is not.
	head, err := br.Peek(mediatype.SniffLen)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return readFailure(err)
	}
	fileType = mediatype.Sniff(head, name)
	key, ok := req.Header[http.CanonicalHeaderKey(HeaderIdempotencyKey)]
	if !ok {
		return a.storeUpload(w, req, name, fileType, br)
	}
	// The file streams, so its fingerprint is known only once it is read: a repeat reads its
	// body to compare it with the first one's.
	one, err := oneKey(key)
	if err != nil {
		return err
	}
	tk, prior, err := a.uc.Idempotency.Begin(req.Context(), idempotency.Call{AccountID: caller(req).ID,
		Key: one, Operation: "POST /uploads"})
	if err != nil {
		return err
	}
	fp := newUploadFingerprint(name, fileType)
	if prior != nil {
		if _, err := io.Copy(fp, br); err != nil {
			return readFailure(err)
		}
		if err := idempotency.Match(prior, fp.sum()); err != nil {
			return err
		}
		return a.replay(w, prior)
	}
	return a.keep(w, req, tk, func(w http.ResponseWriter) (string, error) {
		err := a.storeUpload(w, req, name, fileType, io.TeeReader(br, fp))
		return fp.sum(), err
	})
}

func (a *api) storeUpload(w http.ResponseWriter, req bunrouter.Request, name, fileType string, body io.Reader) error {
	as, err := a.uc.Uploads.Upload(req.Context(), caller(req), name, fileType, body)
	if err != nil {
		return readFailure(err)
	}
	return writeData(w, http.StatusCreated, a.uploadedOf(as))
}

// listUploads is GET /uploads?sha256=HEX: the caller's uploads that hold exactly these bytes,
// newest first, so that a client finds a file the service already has instead of sending it
// again. The hash is required: the listing is a lookup by content, not a browse.
func (a *api) listUploads(w http.ResponseWriter, req bunrouter.Request) error {
	q := req.URL.Query()
	if err := onlyParam(q, "sha256"); err != nil {
		return err
	}
	if !q.Has("sha256") {
		return problem.Reject(problem.CodeValidation, "query parameter sha256 is required: the SHA-256 of the file to look for, 64 hex digits")
	}
	found, err := a.uc.Uploads.Find(req.Context(), caller(req), q.Get("sha256"))
	if err != nil {
		return err
	}
	out := make([]uploaded, 0, len(found))
	for _, as := range found {
		out = append(out, a.uploadedOf(as))
	}
	return writeData(w, http.StatusOK, out)
}

// uploadFingerprint hashes what makes two uploads the same: the name, the type and the bytes
// (not the multipart framing, whose boundary differs on every send).
type uploadFingerprint struct{ h hash.Hash }

func newUploadFingerprint(name, fileType string) uploadFingerprint {
	h := sha256.New()
	fmt.Fprintf(h, "%d:%s%d:%s", len(name), name, len(fileType), fileType)
	return uploadFingerprint{h}
}

func (f uploadFingerprint) Write(b []byte) (int, error) { return f.h.Write(b) }
func (f uploadFingerprint) sum() string                 { return hex.EncodeToString(f.h.Sum(nil)) }

// readFailure keeps a body cap's error (413) and turns a client's broken body into a 400.
func readFailure(err error) error {
	var tooBig *http.MaxBytesError
	var p *problem.Problem
	switch {
	case errors.As(err, &tooBig), errors.As(err, &p):
		return err
	case errors.Is(err, io.ErrUnexpectedEOF):
		return problem.Reject(problem.CodeValidation, "the request body ended early")
	default:
		return err
	}
}

const malformedMultipart = "the multipart/form-data body is malformed: send one part named \"file\", with the boundary that Content-Type declares"

// multipartFile finds the `file` part. Other fields are refused, by name.
func multipartFile(r *http.Request) (name, contentType string, body io.Reader, err error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return "", "", nil, problem.Reject(problem.CodeValidation, "%s", malformedMultipart)
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return "", "", nil, problem.Reject(problem.CodeValidation, "multipart body has no field \"file\"")
		}
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				return "", "", nil, err
			}
			return "", "", nil, problem.Reject(problem.CodeValidation, "%s", malformedMultipart)
		}
		if part.FormName() != "file" {
			return "", "", nil, problem.Reject(problem.CodeValidation, "multipart field %q is not allowed; send the file as field \"file\"", part.FormName())
		}
		ct := part.Header.Get("Content-Type")
		if ct == "application/octet-stream" {
			ct = ""
		}
		// The name as sent: Part.FileName keeps its last element only, so ../../x would be
		// stored as x where X-Filename: ../../x is refused. The upload's checks refuse it.
		name := part.FileName()
		if _, params, err := mime.ParseMediaType(part.Header.Get("Content-Disposition")); err == nil && params["filename"] != "" {
			name = params["filename"]
		}
		return name, ct, &lastPart{part, mr}, nil
	}
}

// lastPart reads the file part of a multipart body, and at its end the rest of the body, which
// must be the closing boundary: a field after the file fails the read, so the upload keeps
// nothing (the blob store writes a blob whole or not at all).
type lastPart struct {
	part *multipart.Part
	mr   *multipart.Reader
}

func (l *lastPart) Read(p []byte) (int, error) {
	n, err := l.part.Read(p)
	if !errors.Is(err, io.EOF) {
		return n, err
	}
	next, nerr := l.mr.NextPart()
	switch {
	case errors.Is(nerr, io.EOF):
		return n, io.EOF
	case nerr == nil:
		return n, problem.Reject(problem.CodeValidation, "multipart field %q after \"file\" is not allowed; send the one field \"file\"", next.FormName())
	default:
		var tooBig *http.MaxBytesError
		if errors.As(nerr, &tooBig) {
			return n, nerr
		}
		return n, problem.Reject(problem.CodeValidation, "%s", malformedMultipart)
	}
}
