package destination

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mediajobs/mediajobs/core/problem"
)

// Destination is an account's S3-compatible bucket that jobs' outputs are delivered to. Its
// secret access key is kept sealed (Keyring) and never shown again after registration.
type Destination struct {
	ID          string
	AccountID   string
	Name        string
	Endpoint    string
	Bucket      string
	Region      string
	Prefix      string
	PathStyle   bool
	AccessKeyID string
	Secret      Sealed
	CreatedAt   time.Time
}

// MaskedKeyID is the access key ID as the API shows it: its last four characters.
func (d Destination) MaskedKeyID() string {
	k := d.AccessKeyID
	if len(k) <= 4 {
		return strings.Repeat("*", len(k))
	}
	return strings.Repeat("*", len(k)-4) + k[len(k)-4:]
}

// Params are a destination as a client registers it; Check validates them.
type Params struct {
	Name            string
	Endpoint        string
	Bucket          string
	Region          string
	Prefix          string
	PathStyle       bool
	AccessKeyID     string
	SecretAccessKey string
}

// Check refuses params a destination cannot have, naming the field. It never quotes the
// secret.
func (p Params) Check() error {
	reject := func(field, format string, args ...any) error {
		return &problem.Problem{Code: problem.CodeValidation, Field: field, Message: field + ": " + fmt.Sprintf(format, args...)}
	}
	if p.Name == "" || len(p.Name) > 100 || !utf8.ValidString(p.Name) {
		return reject("name", "is required, at most 100 bytes")
	}
	// No field holds a control character: none has a use for one, and a NUL would cut the
	// database's statement short.
	for _, f := range []struct{ field, value string }{{"name", p.Name}, {"region", p.Region}, {"prefix", p.Prefix}, {"accessKeyId", p.AccessKeyID}, {"secretAccessKey", p.SecretAccessKey}} {
		if strings.IndexFunc(f.value, unicode.IsControl) >= 0 {
			return reject(f.field, "holds a control character")
		}
	}
	u, err := url.Parse(p.Endpoint)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return reject("endpoint", "%q is not an http(s) URL of an S3-compatible service, such as https://s3.eu-west-1.amazonaws.com", p.Endpoint)
	}
	if !bucketName(p.Bucket) {
		return reject("bucket", "%q is not a bucket name (3 to 63 lowercase letters, digits, '.' and '-')", p.Bucket)
	}
	switch {
	case p.Region == "":
		return reject("region", "is required (for example us-east-1)")
	case len(p.Region) > 64 || strings.ContainsAny(p.Region, " /\\"):
		return reject("region", "%q is not a region name (at most 64 characters, no spaces or slashes; for example us-east-1)", p.Region)
	}
	if p.Prefix != "" {
		if _, err := ParseTemplate(strings.TrimSuffix(p.Prefix, "/") + "/{name}"); err != nil || strings.ContainsAny(p.Prefix, "{}") {
			return reject("prefix", "%q is not a relative key prefix without placeholders, '..' or '//'", p.Prefix)
		}
	}
	if p.AccessKeyID == "" || len(p.AccessKeyID) > 128 {
		return reject("accessKeyId", "is required")
	}
	if p.SecretAccessKey == "" || len(p.SecretAccessKey) > 256 {
		return reject("secretAccessKey", "is required")
	}
	return nil
}

func bucketName(s string) bool {
	if len(s) < 3 || len(s) > 63 {
		return false
	}
	for i, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || (r == '.' || r == '-') && i > 0 && i < len(s)-1
		if !ok {
			return false
		}
	}
	return true
}

// Target is what a Deliverer needs to reach a destination, the secret opened.
type Target struct {
	Endpoint        string
	Bucket          string
	Region          string
	PathStyle       bool
	AccessKeyID     string
	SecretAccessKey string
}

// String never shows the secret, whatever formats a Target.
func (t Target) String() string {
	return fmt.Sprintf("s3 %s bucket %s (key %s)", t.Endpoint, t.Bucket, t.AccessKeyID)
}

// Errors a Deliverer classifies its failures by, so that a registration's test write can name
// the field at fault.
var (
	// ErrCredentials: the service refused the access key or its signature, or denied the write.
	ErrCredentials = errors.New("the destination refused the credentials")
	// ErrNoBucket: the bucket does not exist.
	ErrNoBucket = errors.New("the bucket does not exist")
)

// Deliverer copies bytes to a destination.
type Deliverer interface {
	// Put writes size bytes of r under key and returns the object's ETag.
	Put(ctx context.Context, t Target, key string, r io.ReadSeeker, size int64) (etag string, err error)
	// Check writes a small object under key and deletes it: the registration's test write.
	Check(ctx context.Context, t Target, key string) error
}

// State is where a job's delivery stands.
type State string

const (
	// StateAwaiting: the job has not completed yet.
	StateAwaiting State = "awaiting"
	// StatePending: the job completed; its files are being copied (or wait for a retry).
	StatePending   State = "pending"
	StateDelivered State = "delivered"
	StateFailed    State = "failed"
)

// File is one delivered (or failed) file.
type File struct {
	Name  string `json:"name"`
	Key   string `json:"key"`
	Size  int64  `json:"size"`
	ETag  string `json:"etag,omitempty"`
	Error string `json:"error,omitempty"`
}

// Delivery is the copying of one job's outputs to a destination: created with the job
// (awaiting), made pending by its completion, and worked by the delivery service until it is
// delivered or has failed its attempts. A POST /jobs/{id}/deliver makes a failed one pending
// again, in a new Round.
type Delivery struct {
	JobID         string
	AccountID     string
	DestinationID string
	Path          string
	Preset        string
	State         State
	Files         []File
	Error         string
	Attempts      int
	// Round counts the times the delivery was started: 1, then one more per retry. Events are
	// keyed by it, so that a retry's event is a new one.
	Round         int
	NextAttemptAt *time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// ClaimParams are what ClaimJobDeliveries needs.
type ClaimParams struct {
	Limit int
	// Lease is how long a claimed delivery is kept from other claimers.
	Lease time.Duration
	Now   time.Time
}

// Store keeps destinations and deliveries.
type Store interface {
	// CreateDestination saves a new destination; a taken ID is problem.ErrConflict.
	CreateDestination(ctx context.Context, d Destination) error
	// GetDestination returns a destination, or problem.ErrNotFound.
	GetDestination(ctx context.Context, id string) (Destination, error)
	// ListDestinations returns an account's destinations, oldest first.
	ListDestinations(ctx context.Context, accountID string) ([]Destination, error)
	// ListSealedWith returns up to limit destinations (of any account) whose secret is NOT
	// sealed under keyID: those a key rotation must re-seal.
	ListSealedWith(ctx context.Context, notKeyID string, limit int) ([]Destination, error)
	// SetSecret replaces a destination's sealed secret; a missing one is problem.ErrNotFound.
	SetSecret(ctx context.Context, id string, s Sealed) error
	// DeleteDestination removes a destination, unless a delivery that is awaiting or pending
	// names it: then problem.ErrConflict, and nothing changes. A missing one is
	// problem.ErrNotFound.
	DeleteDestination(ctx context.Context, id string) error

	// CreateJobDelivery saves a job's delivery; a job that has one is problem.ErrConflict.
	CreateJobDelivery(ctx context.Context, d Delivery) error
	// GetJobDelivery returns a job's delivery, or problem.ErrNotFound.
	GetJobDelivery(ctx context.Context, jobID string) (Delivery, error)
	// UpdateJobDelivery changes a job's delivery through fn in a transaction that holds its row;
	// fn's error is returned and nothing is written.
	UpdateJobDelivery(ctx context.Context, jobID string, fn func(*Delivery) error) (Delivery, error)
	// ClaimJobDeliveries returns up to Limit pending deliveries due at Now, oldest due first, and
	// moves their next attempt to Now+Lease; concurrent claimers get distinct deliveries.
	ClaimJobDeliveries(ctx context.Context, p ClaimParams) ([]Delivery, error)
}
