// Package blobs3 is the scale-out blob.Store: a bucket of S3 or of any S3-compatible server,
// so that every API replica and runner sees the same uploads and outputs. It also presigns
// URLs (blob.Presigner) for runners on other machines.
//
// The SDK is aws-sdk-go-v2 rather than minio-go: it is the reference client every
// S3-compatible server is tested against, its credential chain is the one operators already
// configure for every AWS tool (environment, shared files, web identity, container and
// instance roles), and its transfer manager aborts a failed multipart upload with a context of
// its own, so a cancelled request leaves no parts behind.
//
// Keys are the core's (blob.AssetKey, blob.OutputKey): accounts/<account>/assets/<asset> and
// accounts/<account>/jobs/<job>/<file>, under the optional prefix. A bucket lifecycle rule on
// those prefixes expires an account's objects; a rule with AbortIncompleteMultipartUpload
// (a day is plenty) clears the parts of an upload whose process died before it could abort.
package blobs3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mediajobs/mediajobs/core/blob"
	"github.com/mediajobs/mediajobs/core/problem"
)

const (
	// partSize is the size of a multipart upload's parts. A Put holds at most
	// (uploadConcurrency+2) parts in memory, whatever the size of the body, and a body of up to
	// one part goes up in a single PutObject. 10,000 parts make the largest blob 80 GB.
	partSize = 8 << 20
	// uploadConcurrency is how many parts of one Put are in flight at once.
	uploadConcurrency = 2
	// failTimeout bounds the abort of a failed multipart upload, which runs on a context of
	// its own so that it also happens when the caller's context has ended.
	failTimeout = 30 * time.Second
	// maxPresignTTL is the longest validity SigV4 allows a presigned URL.
	maxPresignTTL = 7 * 24 * time.Hour
)

// Store keeps blobs as objects of one bucket.
type Store struct {
	client  *s3.Client
	presign *s3.PresignClient
	tm      *transfermanager.Client
	bucket  string
	prefix  string
}

var (
	_ blob.Store     = (*Store)(nil)
	_ blob.Presigner = (*Store)(nil)
)

// Open returns the store the URL names (see ParseURL), with credentials from the standard AWS
// chain, after checking that the bucket answers.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	c, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	return New(ctx, c)
}

// New returns the store c describes, after checking with a HEAD of the bucket that it exists
// and the credentials reach it, so that a mistake shows at start rather than on the first
// upload. The credentials need s3:ListBucket on the bucket (without it S3 answers a missing
// object with 403, not 404) and s3:GetObject, s3:PutObject, s3:DeleteObject and
// s3:AbortMultipartUpload on its objects.
func New(ctx context.Context, c Config) (*Store, error) {
	if err := checkBucket(c.Bucket); err != nil {
		return nil, err
	}
	if c.Prefix != "" && (!strings.HasSuffix(c.Prefix, "/") || !fs.ValidPath(strings.TrimSuffix(c.Prefix, "/"))) {
		return nil, fmt.Errorf("blobs3: prefix %q: want a relative path ending in /", c.Prefix)
	}
	if c.Credentials == nil {
		if err := checkEnvCredentials(); err != nil {
			return nil, err
		}
	}
	opts := []func(*config.LoadOptions) error{}
	if c.Region != "" {
		opts = append(opts, config.WithRegion(c.Region))
	}
	if c.Credentials != nil {
		opts = append(opts, config.WithCredentialsProvider(c.Credentials))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("blobs3: AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		if c.Endpoint == "" {
			return nil, errors.New("blobs3: no region for AWS S3: add region= to the URL or set AWS_REGION")
		}
		awsCfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if c.Endpoint != "" {
			o.BaseEndpoint = aws.String(c.Endpoint)
		}
		o.UsePathStyle = c.PathStyle
		if c.HTTPClient != nil {
			// Set here rather than in LoadDefaultConfig, which would try to add AWS_CA_BUNDLE
			// to it and fails on a plain *http.Client: a caller's client is used as it is.
			o.HTTPClient = c.HTTPClient
		}
		// Since 2025 the SDK adds CRC checksums to every upload and checks them on every
		// download, which S3-compatible servers of before then refuse or answer without.
		// Checksums stay on where an operation requires them.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	now := c.Now
	if now == nil {
		now = time.Now
	}
	s := &Store{
		client: client,
		presign: s3.NewPresignClient(client, func(o *s3.PresignOptions) {
			// S3 signs the path as sent, escaped once; the SDK's own S3 presigner says so too.
			o.Presigner = clockPresigner{v4.NewSigner(func(so *v4.SignerOptions) { so.DisableURIPathEscaping = true }), now}
		}),
		tm: transfermanager.New(client, func(o *transfermanager.Options) {
			o.PartSizeBytes = partSize
			o.MultipartUploadThreshold = partSize
			o.Concurrency = uploadConcurrency
			o.FailTimeout = failTimeout
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		}),
		bucket: c.Bucket,
		prefix: c.Prefix,
	}
	if _, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(c.Bucket)}); err != nil {
		where := "AWS S3"
		if c.Endpoint != "" {
			where = c.Endpoint
		}
		switch statusOf(err) {
		case http.StatusNotFound:
			return nil, fmt.Errorf("blobs3: bucket %q does not exist at %s", c.Bucket, where)
		case http.StatusForbidden:
			return nil, fmt.Errorf("blobs3: bucket %q at %s refuses these credentials (check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, and s3:ListBucket): %w", c.Bucket, where, err)
		default:
			return nil, fmt.Errorf("blobs3: bucket %q at %s: %w", c.Bucket, where, err)
		}
	}
	return s, nil
}

// checkEnvCredentials refuses half a key pair in the environment, which the AWS chain would
// pass over silently, going on to look for an instance role.
func checkEnvCredentials() error {
	id, secret := envSet("AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY"), envSet("AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY")
	switch {
	case id && !secret:
		return errors.New("blobs3: AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not")
	case secret && !id:
		return errors.New("blobs3: AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not")
	}
	return nil
}

// envSet tells whether any of the variables is set and not empty.
func envSet(names ...string) bool {
	for _, n := range names {
		if os.Getenv(n) != "" {
			return true
		}
	}
	return false
}

// key maps a blob key to an object key. Keys are the service's own, but one that is not a
// clean relative path is refused all the same, as blobfs does.
func (s *Store) key(key string) (string, error) {
	if key == "" || strings.Contains(key, `\`) || !fs.ValidPath(key) {
		return "", fmt.Errorf("blobs3: invalid key %q", key)
	}
	return s.prefix + key, nil
}

// Put streams r to key, in parts past partSize. More than max bytes (max > 0) is
// blob.ErrTooLarge; it is found while reading, before the last part goes up, and the upload is
// aborted, so nothing is kept. Until a Put completes, the object under key is the one before.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, max int64) (int64, error) {
	k, err := s.key(key)
	if err != nil {
		return 0, err
	}
	body := &capReader{ctx: ctx, r: r, max: max}
	_, err = s.tm.UploadObject(ctx, &transfermanager.UploadObjectInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(k),
		Body:   body,
	})
	if body.over {
		return 0, blob.ErrTooLarge
	}
	if err != nil {
		return 0, fmt.Errorf("blobs3: put %s: %w", key, err)
	}
	return body.n, nil
}

// Open returns the blob under key, or problem.ErrNotFound. Its size, time and ETag come from a
// HEAD; its bytes from ranged GETs as they are read, so serving a range of a large blob fetches
// about that range.
func (s *Store) Open(ctx context.Context, key string) (blob.Blob, error) {
	k, err := s.key(key)
	if err != nil {
		return nil, err
	}
	head, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)})
	if statusOf(err) == http.StatusNotFound {
		return nil, fmt.Errorf("blob %s: %w", key, problem.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("blobs3: open %s: %w", key, err)
	}
	return &object{
		ctx:     ctx,
		store:   s,
		key:     k,
		size:    aws.ToInt64(head.ContentLength),
		modTime: aws.ToTime(head.LastModified),
		etag:    aws.ToString(head.ETag),
		window:  firstWindow,
	}, nil
}

// Delete removes the object under key; S3 answers a missing one as deleted.
func (s *Store) Delete(ctx context.Context, key string) error {
	k, err := s.key(key)
	if err != nil {
		return err
	}
	if _, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)}); err != nil {
		return fmt.Errorf("blobs3: delete %s: %w", key, err)
	}
	return nil
}

// PresignGet returns a URL for a GET of key, valid for ttl (at most 7 days, SigV4's limit).
// Signing is local: nothing is asked of the server, and the key need not exist yet.
func (s *Store) PresignGet(ctx context.Context, key string, ttl time.Duration) (string, error) {
	k, err := s.presignable(key, ttl)
	if err != nil {
		return "", err
	}
	req, err := s.presign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)}, s3.WithPresignExpires(ttl))
	if err != nil {
		return "", fmt.Errorf("blobs3: presign GET %s: %w", key, err)
	}
	return req.URL, nil
}

// PresignPut returns a URL for a PUT of the bytes of key, valid for ttl (at most 7 days). The
// PUT sends no headers beyond Content-Length; it can carry up to 5 GB, S3's limit for a single
// PUT, and no cap of ours (see blob.Presigner).
func (s *Store) PresignPut(ctx context.Context, key string, ttl time.Duration) (string, error) {
	k, err := s.presignable(key, ttl)
	if err != nil {
		return "", err
	}
	req, err := s.presign.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)}, s3.WithPresignExpires(ttl))
	if err != nil {
		return "", fmt.Errorf("blobs3: presign PUT %s: %w", key, err)
	}
	return req.URL, nil
}

func (s *Store) presignable(key string, ttl time.Duration) (string, error) {
	if ttl <= 0 || ttl > maxPresignTTL {
		return "", fmt.Errorf("blobs3: presign %s: ttl %v is outside (0, %v]", key, ttl, maxPresignTTL)
	}
	return s.key(key)
}

// clockPresigner signs at the time of the store's clock rather than the SDK's, which reads
// the wall clock and cannot be set.
type clockPresigner struct {
	signer *v4.Signer
	now    func() time.Time
}

func (p clockPresigner) PresignHTTP(ctx context.Context, creds aws.Credentials, r *http.Request, payloadHash, service, region string, _ time.Time, optFns ...func(*v4.SignerOptions)) (string, http.Header, error) {
	return p.signer.PresignHTTP(ctx, creds, r, payloadHash, service, region, p.now(), optFns...)
}

// statusOf is the HTTP status of an S3 answer that is an error, or 0.
func statusOf(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// capReader counts what Put reads and fails the read past max, so that the upload stops
// there; it also stops the read when ctx ends, between the SDK's requests.
type capReader struct {
	ctx  context.Context
	r    io.Reader
	max  int64
	n    int64
	over bool
}

func (c *capReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if c.max > 0 && int64(len(p)) > c.max+1-c.n {
		p = p[:c.max+1-c.n]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.max > 0 && c.n > c.max {
		c.over = true
		return 0, blob.ErrTooLarge
	}
	return n, err
}
