package workqueuetest

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/porttest"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// MemoryCredentials is a workqueue.Credentials in memory.
type MemoryCredentials struct {
	mu     sync.Mutex
	byHash map[string]*workqueue.Credential
}

// NewMemoryCredentials returns an empty credential store.
func NewMemoryCredentials() *MemoryCredentials {
	return &MemoryCredentials{byHash: map[string]*workqueue.Credential{}}
}

func (m *MemoryCredentials) find(idOrName string) *workqueue.Credential {
	for _, c := range m.byHash {
		if c.ID == idOrName || c.Name == idOrName {
			return c
		}
	}
	return nil
}

// CreateCredential stores c; a name or hash in use is problem.ErrConflict.
func (m *MemoryCredentials) CreateCredential(_ context.Context, c workqueue.Credential, hash string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.byHash[hash]; ok || m.find(c.Name) != nil || m.find(c.ID) != nil {
		return problem.ErrConflict
	}
	m.byHash[hash] = &c
	return nil
}

// CredentialByHash returns the credential of hash.
func (m *MemoryCredentials) CredentialByHash(_ context.Context, hash string) (workqueue.Credential, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.byHash[hash]; ok {
		return *c, nil
	}
	return workqueue.Credential{}, problem.ErrNotFound
}

// CredentialByID returns the credential of id.
func (m *MemoryCredentials) CredentialByID(_ context.Context, id string) (workqueue.Credential, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.find(id); c != nil && c.ID == id {
		return *c, nil
	}
	return workqueue.Credential{}, problem.ErrNotFound
}

// ListCredentials returns every credential by name.
func (m *MemoryCredentials) ListCredentials(context.Context) ([]workqueue.Credential, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]workqueue.Credential, 0, len(m.byHash))
	for _, c := range m.byHash {
		out = append(out, *c)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out, nil
}

// RevokeCredential marks a credential revoked.
func (m *MemoryCredentials) RevokeCredential(_ context.Context, idOrName string, at time.Time) (workqueue.Credential, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.find(idOrName)
	if c == nil {
		return workqueue.Credential{}, problem.ErrNotFound
	}
	if c.RevokedAt == nil {
		t := at.UTC().Truncate(time.Microsecond)
		c.RevokedAt = &t
	}
	return *c, nil
}

// TouchCredential records a claim.
func (m *MemoryCredentials) TouchCredential(_ context.Context, id, version string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.find(id); c != nil && c.ID == id {
		t := at.UTC().Truncate(time.Microsecond)
		c.LastSeen, c.Version = &t, version
	}
	return nil
}

// CredentialsFeatures says what a workqueue.Credentials adapter can do. Every adapter (memory,
// SQLite, PostgreSQL) does all the suite asks, so it has no field yet: a new adapter passes every
// test, and a field is added here only when a real adapter cannot do something the others can.
type CredentialsFeatures struct{}

// CredentialsConstructor returns an empty store of its own, cleaned up by the adapter's test.
type CredentialsConstructor func(t *testing.T) workqueue.Credentials

// TestCredentials runs the shared workqueue.Credentials suite: each test below, in parallel,
// against stores that newStore makes. An adapter's own test calls it once per backend.
func TestCredentials(t *testing.T, f CredentialsFeatures, newStore CredentialsConstructor) {
	t.Helper()
	tests := []func(t *testing.T, f CredentialsFeatures, newStore CredentialsConstructor){
		TestCreateFindRevoke,
		TestListsByName,
	}
	porttest.Run(t, f, newStore, tests...)
}

// credentialsBase is the time the suite's credentials are made at.
var credentialsBase = time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)

// TestCreateFindRevoke: a credential is found by the hash of its secret and by its ID, not by its
// name; a second of one name is refused; the first revocation, by name or ID, stands, and keeps the
// version and time TouchCredential recorded.
func TestCreateFindRevoke(t *testing.T, f CredentialsFeatures, newStore CredentialsConstructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	secret, c, hash, err := workqueue.NewCredential("box-7", job.ClassGPU, credentialsBase)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateCredential(ctx, c, hash); err != nil {
		t.Fatal(err)
	}
	got, err := s.CredentialByHash(ctx, workqueue.HashSecret(secret))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(c, got); d != "" {
		t.Fatalf("by hash (-want +got):\n%s", d)
	}
	if byID, err := s.CredentialByID(ctx, c.ID); err != nil || byID.Name != "box-7" {
		t.Fatalf("by ID: %+v %v", byID, err)
	}
	if _, err := s.CredentialByID(ctx, "box-7"); !errors.Is(err, problem.ErrNotFound) {
		t.Fatalf("a name is no ID: %v", err)
	}
	if _, err := s.CredentialByHash(ctx, workqueue.HashSecret(secret+"x")); !errors.Is(err, problem.ErrNotFound) {
		t.Fatalf("an unknown secret: %v, want ErrNotFound", err)
	}
	_, again, hash2, _ := workqueue.NewCredential("box-7", job.ClassCPU, credentialsBase)
	if err := s.CreateCredential(ctx, again, hash2); !errors.Is(err, problem.ErrConflict) {
		t.Fatalf("a second box-7: %v, want ErrConflict", err)
	}
	if err := s.TouchCredential(ctx, c.ID, "v1.2.3", credentialsBase.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	revoked, err := s.RevokeCredential(ctx, "box-7", credentialsBase.Add(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if revoked.RevokedAt == nil || !revoked.RevokedAt.Equal(credentialsBase.Add(2*time.Minute)) {
		t.Fatalf("revoked at %v", revoked.RevokedAt)
	}
	// An earlier revocation stands; by ID works as by name.
	if again, err := s.RevokeCredential(ctx, c.ID, credentialsBase.Add(time.Hour)); err != nil || !again.RevokedAt.Equal(*revoked.RevokedAt) {
		t.Fatalf("revoked again: %v, %v", again.RevokedAt, err)
	}
	got, err = s.CredentialByHash(ctx, workqueue.HashSecret(secret))
	if err != nil || got.RevokedAt == nil || got.Version != "v1.2.3" || got.LastSeen == nil || !got.LastSeen.Equal(credentialsBase.Add(time.Minute)) {
		t.Fatalf("after revoke: %+v, %v", got, err)
	}
	if _, err := s.RevokeCredential(ctx, "nobody", credentialsBase); !errors.Is(err, problem.ErrNotFound) {
		t.Fatalf("revoke nobody: %v, want ErrNotFound", err)
	}
}

// TestListsByName: ListCredentials lists every credential in the order of their names.
func TestListsByName(t *testing.T, f CredentialsFeatures, newStore CredentialsConstructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	var want []string
	for _, n := range []string{"zeta", "alpha", "mid"} {
		_, c, hash, err := workqueue.NewCredential(n, "", credentialsBase)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CreateCredential(ctx, c, hash); err != nil {
			t.Fatal(err)
		}
	}
	want = []string{"alpha", "mid", "zeta"}
	list, err := s.ListCredentials(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range list {
		got = append(got, c.Name)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("names (-want +got):\n%s", d)
	}
}
