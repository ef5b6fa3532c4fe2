package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mediajobs/mediajobs"
	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/job"
)

func init() {
	register(command{name: "serve", summary: "run the API, the control plane and the in-process runner", run: runServe})
	register(command{name: "dev", summary: "serve, with a development account made on first start and its key printed", run: runDev})
	register(command{name: "migrate", summary: "apply the store's migrations and print them", run: runMigrate})
}

func parse(name string, args []string, stderr io.Writer, extra func(*flag.FlagSet)) (mediajobs.Config, *flag.FlagSet, bool) {
	var cfg mediajobs.Config
	fs := flag.NewFlagSet("mediajobs "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.Flags(fs)
	if extra != nil {
		extra(fs)
	}
	return cfg, fs, fs.Parse(args) == nil
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, _, ok := parse("serve", args, stderr, nil)
	if !ok {
		return 2
	}
	return serve(ctx, cfg, stderr, nil)
}

// serve opens the app, listens, calls ready (if any) and runs until ctx ends.
func serve(ctx context.Context, cfg mediajobs.Config, stderr io.Writer, ready func(*mediajobs.App) error) int {
	a, err := mediajobs.Open(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "mediajobs:", err)
		return 1
	}
	defer a.Close()
	// Before listening and before dev's account: a second server on this data directory stops
	// here, having changed nothing. Run would take the lock too, later.
	if err := a.LockData(); err != nil {
		fmt.Fprintln(stderr, "mediajobs:", err)
		return 1
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		fmt.Fprintln(stderr, "mediajobs:", err)
		return 1
	}
	if ready != nil {
		if err := ready(a); err != nil {
			fmt.Fprintln(stderr, "mediajobs:", err)
			return 1
		}
	}
	base := a.Config.BaseURL
	a.Log.Info("mediajobs serving", "addr", ln.Addr().String(), "baseURL", base, "data", a.Config.Data,
		"console", base+"/", "docs", base+"/docs", "openapi", base+"/openapi.json")
	if err := a.Run(ctx, ln); err != nil {
		fmt.Fprintln(stderr, "mediajobs:", err)
		return 1
	}
	return 0
}

// devAccount is kept in <data>/dev-account.json so that every `make run` can print a working
// key. It exists only for the development command; production keys are shown once.
type devAccount struct {
	AccountID string `json:"accountId"`
	APIKey    string `json:"apiKey"`
}

func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, _, ok := parse("dev", args, stderr, nil)
	if !ok {
		return 2
	}
	return serve(ctx, cfg, stderr, func(a *mediajobs.App) error {
		path := filepath.Join(cfg.Data, "dev-account.json")
		var dev devAccount
		if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &dev) == nil && dev.APIKey != "" {
			if _, err := a.UC.Auth.Authenticate(ctx, dev.APIKey); err != nil {
				dev = devAccount{}
			}
		}
		if dev.APIKey == "" {
			created, err := createAccount(ctx, a, account.PlanPro)
			if err != nil {
				return err
			}
			dev = created
			b, _ := json.MarshalIndent(dev, "", "  ")
			if err := os.WriteFile(path, b, 0o600); err != nil {
				return err
			}
		}
		base := a.Config.BaseURL
		fmt.Fprintf(stdout, `
mediajobs is running at %[1]s (data in %[2]s)

  account  %[3]s (pro plan, development)
  API key  %[4]s

Submit a job that works offline (a test pattern), then wait for it (up to 30 s per request):

  curl -s -X POST %[1]s/jobs -H 'Authorization: Bearer %[4]s' -H 'Content-Type: application/json' \
    -d '{"type":"ffmpeg","params":{"command":"ffmpeg -f lavfi -i testsrc=duration=3:size=640x360:rate=25 -c:v libx264 -pix_fmt yuv420p out.mp4"}}'
  curl -s '%[1]s/jobs/<job_id>?wait=30' -H 'Authorization: Bearer %[4]s'

The web console is at %[1]s/ and the API reference at %[1]s/docs (the document itself:
%[1]s/openapi.json). Stop with Ctrl-C.

`, base, cfg.Data, dev.AccountID, dev.APIKey)
		return nil
	})
}

func createAccount(ctx context.Context, a *mediajobs.App, plan account.Plan) (devAccount, error) {
	now := time.Now()
	acc := account.Account{ID: job.NewID("acc"), Plan: plan, CreatedAt: now.UTC().Truncate(time.Microsecond)}
	// The service, not the store: opening an account gives its plan's grants.
	if err := a.UC.Credits.OpenAccount(ctx, acc); err != nil {
		return devAccount{}, err
	}
	secret, key := account.NewKey(acc.ID, job.NewID("key"), now)
	if err := a.Store.CreateKey(ctx, key); err != nil {
		return devAccount{}, err
	}
	return devAccount{AccountID: acc.ID, APIKey: secret}, nil
}

func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, _, ok := parse("migrate", args, stderr, nil)
	if !ok {
		return 2
	}
	store, err := mediajobs.OpenStore(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "mediajobs migrate:", err)
		return 1
	}
	defer store.Close()
	applied, err := store.AppliedMigrations(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "mediajobs migrate:", err)
		return 1
	}
	fmt.Fprintf(stdout, "migrations applied: %s\n", strings.Join(applied, ", "))
	return 0
}
