// Package s3deliver is the destination.Deliverer of S3 and S3-compatible services: it copies
// a job's output files to an account's own bucket with aws-sdk-go-v2, over an HTTP client that
// refuses private addresses (the endpoint is a client's).
package s3deliver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mediajobs/mediajobs/adapters/safehttp"
	"github.com/mediajobs/mediajobs/core/destination"
)

// Deliverer puts objects into destinations. The zero value uses http.DefaultClient; the
// composition root gives it the SSRF-guarded client.
type Deliverer struct {
	HTTP *http.Client
	// Attempts is how many times the SDK tries one request (it backs off between); default 3.
	Attempts int
}

var _ destination.Deliverer = Deliverer{}

func (d Deliverer) client(t destination.Target) *s3.Client {
	attempts := d.Attempts
	if attempts <= 0 {
		attempts = 3
	}
	o := s3.Options{
		BaseEndpoint:     aws.String(t.Endpoint),
		Region:           t.Region,
		UsePathStyle:     t.PathStyle,
		Credentials:      credentials.NewStaticCredentialsProvider(t.AccessKeyID, t.SecretAccessKey, ""),
		RetryMaxAttempts: attempts,
		// Checksums only where an operation requires them: S3-compatible servers of before 2025
		// refuse the SDK's default CRCs (as in blobs3).
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	}
	if d.HTTP != nil { // a nil *http.Client in the interface field would be used as is
		o.HTTPClient = d.HTTP
	}
	return s3.New(o)
}

// Put implements destination.Deliverer with one PutObject (S3 takes up to 5 GiB so).
func (d Deliverer) Put(ctx context.Context, t destination.Target, key string, r io.ReadSeeker, size int64) (string, error) {
	out, err := d.client(t).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(t.Bucket), Key: aws.String(key),
		Body: r, ContentLength: aws.Int64(size)})
	if err != nil {
		return "", classify(err)
	}
	return aws.ToString(out.ETag), nil
}

// Check implements destination.Deliverer: a small object written, then deleted.
func (d Deliverer) Check(ctx context.Context, t destination.Target, key string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c := d.client(t)
	body := []byte("mediajobs destination check\n")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(t.Bucket), Key: aws.String(key),
		Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body)))}); err != nil {
		return classify(err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(t.Bucket), Key: aws.String(key)}); err != nil {
		return fmt.Errorf("the test object %s was written but not deleted: %w", key, classify(err))
	}
	return nil
}

// classify wraps the service's refusals in the destination's errors, by S3's error codes, and
// keeps the rest short: the SDK's error strings name the operation and the service's message,
// never the secret.
func classify(err error) error {
	var coded interface{ ErrorCode() string }
	if errors.As(err, &coded) {
		switch coded.ErrorCode() {
		case "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "InvalidToken", "ExpiredToken", "AuthorizationHeaderMalformed":
			return fmt.Errorf("%w: %s", destination.ErrCredentials, coded.ErrorCode())
		case "NoSuchBucket":
			return fmt.Errorf("%w: NoSuchBucket", destination.ErrNoBucket)
		}
		return fmt.Errorf("S3 answered %s: %w", coded.ErrorCode(), err)
	}
	// Anything else is the connection's: said in safehttp's terms, never with what the host
	// name resolved to (an oracle of the network behind the service).
	return fmt.Errorf("cannot connect: %w", safehttp.Public(err))
}

// URLChecker vets a destination's endpoint before the registration's test write: http or
// https, and every address its host resolves to allowed by the policy (public, or opened by
// MEDIAJOBS_ALLOW_PRIVATE_NETWORKS). The client checks again at every connection.
type URLChecker struct {
	HTTP safehttp.Config
}

// CheckURL implements service.URLChecker.
func (c URLChecker) CheckURL(ctx context.Context, rawURL string) error {
	cfg := c.HTTP
	cfg.AllowHTTP = true
	// The message reaches the client: the reason, never what the name resolved to.
	return safehttp.Public(safehttp.CheckURL(ctx, rawURL, cfg))
}
