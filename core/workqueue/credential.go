package workqueue

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/mediajobs/mediajobs/core/job"
)

// Identity is who a call of the work queue comes from, as its transport authenticated it: the
// worker credential's ID and name, and the one compute class it may claim ("" for any). The
// control plane records the identity on every job a worker claims, honours a lease only from
// the identity that claimed it, and logs refusals with it.
type Identity struct {
	ID    string
	Name  string
	Class job.Class
}

// The identities that no stored credential stands for.
var (
	// Local is the control plane's own in-process runner.
	Local = Identity{ID: "local", Name: "in-process runner"}
	// EnvToken is every worker presenting the environment's shared token
	// (MEDIAJOBS_WORKER_TOKEN): one credential for a simple set-up, revoked by removing it.
	EnvToken = Identity{ID: "wkr_env", Name: "MEDIAJOBS_WORKER_TOKEN"}
)

// Credential is a worker credential an operator issued: a name, the class its workers may
// claim, and a secret shown once and stored only as its hash.
type Credential struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Class     job.Class  `json:"class,omitempty"`
	CreatedAt time.Time  `json:"createdAt"`
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
	// LastSeen and Version are of the latest claim made with the credential.
	LastSeen *time.Time `json:"lastSeen,omitempty"`
	Version  string     `json:"version,omitempty"`
}

// Identity is the identity calls made with c carry.
func (c Credential) Identity() Identity { return Identity{ID: c.ID, Name: c.Name, Class: c.Class} }

// CredentialPrefix starts every worker credential's secret.
const CredentialPrefix = "mjw_"

// NewCredential makes a credential named name for workers of class ("" for any): the secret to
// show once, and the credential and secret hash to store.
func NewCredential(name string, class job.Class, now time.Time) (secret string, c Credential, hash string, err error) {
	if err := CheckWorkerName(name); err != nil {
		return "", Credential{}, "", err
	}
	if class != "" && class != job.ClassCPU && class != job.ClassGPU {
		return "", Credential{}, "", fmt.Errorf("class %q is not cpu or gpu", class)
	}
	var id [10]byte
	var b [24]byte
	_, _ = rand.Read(id[:]) // crypto/rand.Read never fails on supported platforms.
	_, _ = rand.Read(b[:])
	enc := base32.StdEncoding.WithPadding(base32.NoPadding)
	secret = CredentialPrefix + strings.ToLower(enc.EncodeToString(b[:]))
	c = Credential{ID: "wkr_" + strings.ToLower(enc.EncodeToString(id[:])), Name: name, Class: class,
		CreatedAt: now.UTC().Truncate(time.Microsecond)}
	return secret, c, HashSecret(secret), nil
}

// CheckWorkerName accepts 1 to 64 letters, digits, '.', '_' and '-', not starting with '-',
// and not a name an ID or the shared token goes by (revocation takes an ID or a name).
func CheckWorkerName(name string) error {
	if strings.HasPrefix(name, "wkr_") || name == EnvToken.Name || name == Local.ID {
		return fmt.Errorf("worker name %q is reserved (an ID or the shared token's)", name)
	}
	ok := name != "" && len(name) <= 64 && name[0] != '-'
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'
	}
	if !ok {
		return fmt.Errorf("worker name %q is not 1 to 64 letters, digits, '.', '_' or '-'", name)
	}
	return nil
}

// HashSecret is how a credential's secret is stored and looked up.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Credentials is the port of the stored worker credentials.
type Credentials interface {
	// CreateCredential stores c under the secret's hash; a name in use is problem.ErrConflict.
	CreateCredential(ctx context.Context, c Credential, hash string) error
	// CredentialByHash returns the credential of a secret's hash, revoked or not, or
	// problem.ErrNotFound.
	CredentialByHash(ctx context.Context, hash string) (Credential, error)
	// CredentialByID returns the credential of an ID, revoked or not, or problem.ErrNotFound.
	CredentialByID(ctx context.Context, id string) (Credential, error)
	// ListCredentials returns every credential, revoked ones too, by name.
	ListCredentials(ctx context.Context) ([]Credential, error)
	// RevokeCredential marks the credential of that ID or name revoked at at (an earlier
	// revocation stands) and returns it; an unknown one is problem.ErrNotFound.
	RevokeCredential(ctx context.Context, idOrName string, at time.Time) (Credential, error)
	// TouchCredential records a claim made with the credential id, by a worker of version.
	TouchCredential(ctx context.Context, id, version string, at time.Time) error
}

// CleanVersion is a worker's reported version as it may be stored and shown: printable ASCII,
// at most 64 bytes; anything else is dropped.
func CleanVersion(v string) string {
	b := make([]byte, 0, min(len(v), 64))
	for i := 0; i < len(v) && len(b) < 64; i++ {
		if c := v[i]; c > ' ' && c < 0x7f {
			b = append(b, c)
		}
	}
	return string(b)
}
