package integration

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
)

// admin runs an admin subcommand against the server's store while it runs; it returns stdout,
// stderr and the exit status.
func admin(t *testing.T, s *server, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, append(args, "--data", s.Data)...)
	cmd.Env = s.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("mediajobs %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}

// The operator's commands work on a running server's store: keys are created and revoked,
// plans change, migrations are listed, and mistakes are named.
func TestAdminCommands(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		srv := startServer(t, serverOpts{Unthrottled: true, Backend: b, Env: map[string]string{"MEDIAJOBS_RUNNER": "false"}})
		acc := createAccount(t, srv, "free")
		first := newClient(t, srv, acc.APIKey)

		out, errOut, code := admin(t, srv, "keys", "create", "--account", acc.AccountID)
		var key struct {
			AccountID string `json:"accountId"`
			KeyID     string `json:"keyId"`
			APIKey    string `json:"apiKey"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &key) != nil || key.APIKey == "" || !strings.HasPrefix(key.KeyID, "key_") {
			t.Fatalf("keys create: %d %q %q", code, out, errOut)
		}
		second := newClient(t, srv, key.APIKey)
		second.do(http.MethodGet, "/account", nil, nil).decode(t, http.StatusOK, nil)

		if _, errOut, code := admin(t, srv, "keys", "revoke", "--account", acc.AccountID, "--key", key.KeyID); code != 0 {
			t.Fatalf("keys revoke: %d %s", code, errOut)
		}
		if e := second.do(http.MethodGet, "/account", nil, nil).errorOf(t, http.StatusUnauthorized); e.Code != "UNAUTHORIZED" {
			t.Fatalf("revoked key: %+v", e)
		}
		first.do(http.MethodGet, "/account", nil, nil).decode(t, http.StatusOK, nil)

		if _, errOut, code := admin(t, srv, "accounts", "set-plan", "--account", acc.AccountID, "--plan", "pro"); code != 0 {
			t.Fatalf("set-plan: %d %s", code, errOut)
		}
		var got struct {
			Plan string `json:"plan"`
		}
		first.do(http.MethodGet, "/account", nil, nil).decode(t, http.StatusOK, &got)
		if got.Plan != "pro" {
			t.Fatalf("plan after set-plan: %q", got.Plan)
		}

		if out, errOut, code := admin(t, srv, "migrate"); code != 0 || !strings.Contains(out, "20261122000001") {
			t.Fatalf("migrate: %d %q %q", code, out, errOut)
		}

		for _, tc := range []struct {
			args  []string
			code  int
			names string
		}{
			{[]string{"keys", "revoke", "--account", acc.AccountID, "--key", "key_nope"}, 1, "key_nope"},
			{[]string{"keys", "create", "--account", "acc_nope"}, 1, "acc_nope"},
			{[]string{"accounts", "create", "--plan", "gold"}, 2, "gold"},
			{[]string{"accounts", "delete"}, 2, "usage"},
		} {
			if _, errOut, code := admin(t, srv, tc.args...); code != tc.code || !strings.Contains(errOut, tc.names) {
				t.Errorf("%v: exit %d, stderr %q; want exit %d naming %q", tc.args, code, errOut, tc.code, tc.names)
			}
		}
	})
}
