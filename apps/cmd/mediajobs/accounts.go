package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/mediajobs/mediajobs"
	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/job"
)

func init() {
	register(command{name: "accounts", summary: "create an account (prints its first API key) or set its plan", run: runAccounts})
	register(command{name: "keys", summary: "create or revoke an account's API keys", run: runKeys})
}

// admin opens the store alone (no server) for an admin subcommand.
func admin(ctx context.Context, name string, args []string, stderr io.Writer, extra func(*flag.FlagSet)) (*mediajobs.App, *flag.FlagSet, int) {
	cfg, fs, ok := parse(name, args, stderr, extra)
	if !ok {
		return nil, nil, 2
	}
	cfg.Runner = false
	a, err := mediajobs.Open(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "mediajobs %s: %v\n", name, err)
		return nil, nil, 1
	}
	return a, fs, 0
}

func printJSON(w io.Writer, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintln(w, string(b))
}

func runAccounts(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "create" && args[0] != "set-plan") {
		fmt.Fprintln(stderr, "usage: mediajobs accounts create --plan free|pro [--data DIR]\n       mediajobs accounts set-plan --account ID --plan free|pro [--data DIR]")
		return 2
	}
	var plan, id string
	a, _, code := admin(ctx, "accounts "+args[0], args[1:], stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&plan, "plan", "free", "plan: free or pro")
		fs.StringVar(&id, "account", "", "account ID (set-plan)")
	})
	if a == nil {
		return code
	}
	defer a.Close()
	p, err := account.ParsePlan(plan)
	if err != nil {
		fmt.Fprintln(stderr, "mediajobs accounts:", err)
		return 2
	}
	if args[0] == "set-plan" {
		if err := a.UC.Credits.SetPlan(ctx, id, p); err != nil {
			fmt.Fprintf(stderr, "mediajobs accounts set-plan: account %q: %v\n", id, err)
			return 1
		}
		printJSON(stdout, map[string]string{"accountId": id, "plan": string(p)})
		return 0
	}
	created, err := createAccount(ctx, a, p)
	if err != nil {
		fmt.Fprintln(stderr, "mediajobs accounts create:", err)
		return 1
	}
	printJSON(stdout, created)
	return 0
}

func runKeys(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "create" && args[0] != "revoke") {
		fmt.Fprintln(stderr, "usage: mediajobs keys create --account ID [--data DIR]\n       mediajobs keys revoke --account ID --key KEY_ID [--data DIR]")
		return 2
	}
	var accountID, keyID string
	a, _, code := admin(ctx, "keys "+args[0], args[1:], stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&accountID, "account", "", "account ID")
		fs.StringVar(&keyID, "key", "", "key ID (revoke)")
	})
	if a == nil {
		return code
	}
	defer a.Close()
	if _, err := a.Store.GetAccount(ctx, accountID); err != nil {
		fmt.Fprintf(stderr, "mediajobs keys: account %q: %v\n", accountID, err)
		return 1
	}
	if args[0] == "revoke" {
		if err := a.Store.RevokeKey(ctx, accountID, keyID, time.Now()); err != nil {
			fmt.Fprintf(stderr, "mediajobs keys revoke: key %q: %v\n", keyID, err)
			return 1
		}
		printJSON(stdout, map[string]string{"accountId": accountID, "keyId": keyID, "status": "revoked"})
		return 0
	}
	secret, key := account.NewKey(accountID, job.NewID("key"), time.Now())
	if err := a.Store.CreateKey(ctx, key); err != nil {
		fmt.Fprintln(stderr, "mediajobs keys create:", err)
		return 1
	}
	printJSON(stdout, map[string]string{"accountId": accountID, "keyId": key.ID, "apiKey": secret})
	return 0
}
