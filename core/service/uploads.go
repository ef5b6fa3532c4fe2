package service

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/asset"
	"github.com/mediajobs/mediajobs/core/blob"
	"github.com/mediajobs/mediajobs/core/clock"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
)

// UploadsPorts are what uploads need.
type UploadsPorts struct {
	Assets asset.Store
	Blobs  blob.Store
	Clock  clock.Clock
	// MaxUpload caps an uploaded asset, in bytes.
	MaxUpload int64
	// AssetURLPrefix is "{base_url}/assets/".
	AssetURLPrefix string
}

// Uploads is POST /uploads and the content of uploaded assets.
type Uploads struct {
	p UploadsPorts
}

// NewUploads returns the Uploads use case.
func NewUploads(p UploadsPorts) (*Uploads, error) {
	err := need("Uploads", port{"an asset store", p.Assets}, port{"a blob store", p.Blobs}, port{"a clock", p.Clock})
	if p.MaxUpload <= 0 {
		err = errors.Join(err, errors.New("Uploads needs a positive MaxUpload"))
	}
	if err != nil {
		return nil, err
	}
	return &Uploads{p: p}, nil
}

// MaxUpload is the largest asset, in bytes.
func (s *Uploads) MaxUpload() int64 { return s.p.MaxUpload }

// URL is an asset's content URL.
func (s *Uploads) URL(id string) string { return s.p.AssetURLPrefix + id + "/content" }

// Upload stores an asset for the account and returns its record, with the SHA-256 of its bytes
// hashed as they stream; its content URL is URL(ID). An unnamed upload is called "upload".
func (s *Uploads) Upload(ctx context.Context, a account.Account, name, contentType string, r io.Reader) (asset.Asset, error) {
	if name == "" {
		name = "upload"
	}
	if err := asset.CheckName(name); err != nil {
		return asset.Asset{}, err
	}
	as := asset.Asset{ID: job.NewID("ast"), AccountID: a.ID, Name: name, ContentType: contentType,
		CreatedAt: s.p.Clock.Now().UTC().Truncate(time.Microsecond)}
	h := sha256.New()
	n, err := s.p.Blobs.Put(ctx, blob.AssetKey(a.ID, as.ID), io.TeeReader(r, h), s.p.MaxUpload)
	if errors.Is(err, blob.ErrTooLarge) {
		return asset.Asset{}, problem.Reject(problem.CodePayloadTooLarge, "upload exceeds the %d byte limit", s.p.MaxUpload)
	}
	if err != nil {
		return asset.Asset{}, err
	}
	as.Size, as.SHA256 = n, hex.EncodeToString(h.Sum(nil))
	if err := s.p.Assets.CreateAsset(ctx, as); err != nil {
		_ = s.p.Blobs.Delete(ctx, blob.AssetKey(a.ID, as.ID))
		return asset.Asset{}, err
	}
	return as, nil
}

// Open returns the account's asset and its bytes; another account's is NOT_FOUND.
func (s *Uploads) Open(ctx context.Context, a account.Account, id string) (asset.Asset, blob.Blob, error) {
	as, err := s.p.Assets.GetAsset(ctx, id)
	if errors.Is(err, problem.ErrNotFound) || (err == nil && as.AccountID != a.ID) {
		return asset.Asset{}, nil, problem.Reject(problem.CodeNotFound, "asset %q not found", id)
	}
	if err != nil {
		return asset.Asset{}, nil, err
	}
	b, err := s.p.Blobs.Open(ctx, blob.AssetKey(as.AccountID, id))
	if err != nil {
		return asset.Asset{}, nil, err
	}
	return as, b, nil
}

// Find returns the account's uploads whose bytes have the SHA-256 sum (hex, either case), newest
// first: a client that holds a file finds whether the service holds it already. Another
// account's uploads are never among them.
func (s *Uploads) Find(ctx context.Context, a account.Account, sum string) ([]asset.Asset, error) {
	sum = strings.ToLower(sum)
	if err := asset.CheckSHA256("sha256", sum); err != nil {
		return nil, err
	}
	return s.p.Assets.FindAssetsBySHA256(ctx, a.ID, sum)
}

// URLPrefix is "{base_url}/assets/", under which asset content URLs live.
func (s *Uploads) URLPrefix() string { return s.p.AssetURLPrefix }
