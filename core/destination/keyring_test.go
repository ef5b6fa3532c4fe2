package destination_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/core/destination"
)

func key(id string, b byte) destination.SecretKey {
	return destination.SecretKey{ID: id, Secret: bytes.Repeat([]byte{b}, 32)}
}

func TestKeyringSealOpen(t *testing.T) {
	t.Parallel()
	old, err := destination.NewKeyring(key("k1", 1))
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := destination.NewKeyring(key("k2", 2), key("k1", 1))
	if err != nil {
		t.Fatal(err)
	}
	const secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	s1, err := old.Seal(secret, "dst_1")
	if err != nil {
		t.Fatal(err)
	}
	s1b, _ := old.Seal(secret, "dst_1")
	if s1.KeyID != "k1" || bytes.Contains(s1.Box, []byte(secret)) || bytes.Equal(s1.Box, s1b.Box) {
		t.Fatalf("sealed %+v: want key k1, no plaintext, a fresh nonce per value", s1)
	}
	resealed, changed, err := rotated.Reseal(s1, "dst_1")
	if err != nil || !changed || resealed.KeyID != "k2" {
		t.Fatalf("Reseal = %+v, %v, %v; want under k2", resealed, changed, err)
	}
	tests := []struct {
		name    string
		k       *destination.Keyring
		s       destination.Sealed
		aad     string
		wantErr string
	}{
		{"old key opens its own", old, s1, "dst_1", ""},
		{"rotated keyring opens the old key's", rotated, s1, "dst_1", ""},
		{"rotated keyring opens the new key's", rotated, resealed, "dst_1", ""},
		{"old keyring lacks the new key", old, resealed, "dst_1", "does not hold"},
		{"another destination's box", old, s1, "dst_2", "does not open"},
		{"tampered", old, destination.Sealed{KeyID: "k1", Box: append(bytes.Clone(s1.Box[:len(s1.Box)-1]), s1.Box[len(s1.Box)-1]^1)}, "dst_1", "does not open"},
		{"short", old, destination.Sealed{KeyID: "k1", Box: []byte{1, 2}}, "dst_1", "too short"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.k.Open(tt.s, tt.aad)
			if tt.wantErr == "" {
				if err != nil || got != secret {
					t.Fatalf("Open = %q, %v; want the secret", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Open = %q, %v; want an error containing %q", got, err, tt.wantErr)
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatal("the error shows the secret")
			}
		})
	}
	if _, changed, err := rotated.Reseal(resealed, "dst_1"); changed || err != nil {
		t.Fatalf("Reseal of a current value: changed %v, %v", changed, err)
	}
	if _, err := old.Open(destination.Sealed{KeyID: "k9", Box: s1.Box}, "dst_1"); !errors.Is(err, destination.ErrUnknownKey) {
		t.Fatalf("unknown key: %v", err)
	}
}

func TestParseKeys(t *testing.T) {
	t.Parallel()
	hex64 := strings.Repeat("ab", 32)
	tests := []struct {
		name, in, wantErr string
		wantIDs           []string
	}{
		{"one", "k1:" + hex64, "", []string{"k1"}},
		{"two, first seals", "k2:" + hex64 + ", k1:" + hex64, "", []string{"k2", "k1"}},
		{"no colon", hex64, "id:64-hex-digits", nil},
		{"short", "k1:abcd", "64 hex digits", nil},
		{"not hex", "k1:" + strings.Repeat("zz", 32), "64 hex digits", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			keys, err := destination.ParseKeys(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), hex64) {
					t.Fatalf("ParseKeys = %v; want an error containing %q, not the key", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, k := range keys {
				ids = append(ids, k.ID)
			}
			if strings.Join(ids, ",") != strings.Join(tt.wantIDs, ",") {
				t.Fatalf("ids %v; want %v", ids, tt.wantIDs)
			}
		})
	}
	if _, err := destination.NewKeyring(key("k1", 1), key("k1", 2)); err == nil {
		t.Fatal("NewKeyring took one ID twice")
	}
}
