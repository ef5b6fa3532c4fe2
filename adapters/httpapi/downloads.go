package httpapi

import (
	"errors"
	"net/http"
	"path"
	"strings"

	"github.com/uptrace/bunrouter"

	"github.com/mediajobs/mediajobs/adapters/mediatype"
	"github.com/mediajobs/mediajobs/adapters/urlsign"
	"github.com/mediajobs/mediajobs/core/blob"
	"github.com/mediajobs/mediajobs/core/problem"
)

// downloadFile serves GET|HEAD /dl/{job_id}?token=: the single file of a job. The token covers
// the file's name, which only the job knows, so the output is looked up first; a job or file
// that is not there is answered as a bad token, telling nothing about which jobs exist.
func (a *api) downloadFile(w http.ResponseWriter, req bunrouter.Request) error {
	jobID, token := req.Param("job_id"), req.URL.Query().Get("token")
	if token == "" {
		return problem.Reject(problem.CodeForbidden, "the token query parameter is required; use the URL from GET /jobs/{id}")
	}
	f, blob, err := a.uc.Jobs.OpenOutput(req.Context(), jobID, "")
	if problem.CodeOf(err) == problem.CodeNotFound {
		return forbidden(urlsign.ErrForged)
	}
	if err != nil {
		return err
	}
	defer blob.Close()
	if err := a.opts.Verifier.Verify(urlsign.KindFile, jobID, f.Path, token, a.opts.Now()); err != nil {
		return forbidden(err)
	}
	a.serveDownload(w, req, f.Path, blob)
	return nil
}

// downloadMember serves GET|HEAD /v/{job_id}/{token}/{file}: a member of a stream or set. The
// token covers the job, not the file, so it is checked before anything is looked up.
func (a *api) downloadMember(w http.ResponseWriter, req bunrouter.Request) error {
	jobID, token, file := req.Param("job_id"), req.Param("token"), req.Param("file")
	origin, err := a.opts.Verifier.VerifyMember(jobID, token, a.opts.Now())
	if err != nil {
		return forbidden(err)
	}
	f, b, err := a.uc.Jobs.OpenOutput(req.Context(), jobID, file)
	if err != nil {
		return err
	}
	defer b.Close()
	// ?raw serves the playlist as FFmpeg wrote it, with relative member names: for a copy kept
	// on disk beside its segments (the Go client's Download asks for it).
	if strings.EqualFold(path.Ext(f.Path), ".m3u8") && !req.URL.Query().Has("raw") {
		if b, err = a.resignPlaylist(jobID, f.Path, b, origin); err != nil {
			return err
		}
	}
	a.serveDownload(w, req, f.Path, b)
	return nil
}

func (a *api) serveDownload(w http.ResponseWriter, req bunrouter.Request, name string, blob blob.Blob) {
	h := w.Header()
	// Browser players (hls.js, dash.js) fetch segments cross-origin; the token is the access check.
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Expose-Headers", "Content-Length, Content-Range, Accept-Ranges")
	h.Set("Cache-Control", "private, max-age=60")
	a.serveContent(w, req.Request, name, mediatype.ByName(name), blob)
}

// forbidden turns a token failure into FORBIDDEN, saying whether the link expired or is not
// valid; a non-token error passes through.
func forbidden(err error) error {
	switch {
	case errors.Is(err, urlsign.ErrExpired):
		return problem.Reject(problem.CodeForbidden, "%v", err)
	case errors.Is(err, urlsign.ErrForged):
		return problem.Reject(problem.CodeForbidden, "download link is not valid for this file: the token was not issued for it")
	default:
		return err
	}
}
