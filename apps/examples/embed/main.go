// Command embed shows mediajobs' use cases inside another Go program, behind that program's
// own HTTP router: a small "cards" service that renders a colour card as a PNG. It opens the
// service with mediajobs.Open (SQLite and blobs under -data, the sandboxed in-process runner), starts
// its background work with Start, and calls the use cases (Submit, Jobs) from its own handlers.
// Only the signed file links (/dl/, /v/) go to mediajobs' own handler.
//
//	go run ./examples/embed -addr 127.0.0.1:8090 -data /tmp/cards
//	curl -s -X POST localhost:8090/cards -d '{"color":"teal","size":"320x180"}'
//	curl -s localhost:8090/cards/job_...          # {"status":"complete","png":"http://.../dl/job_...?token=..."}
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"syscall"
	"time"

	"github.com/mediajobs/mediajobs"
	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "listen address")
	data := flag.String("data", "./var-embed", "data directory of the embedded service")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	cards, err := openCards(ctx, *data, "http://"+ln.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer cards.Close()
	srv := &http.Server{Handler: cards.Routes(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.Background())
	}()
	log.Printf("cards on %s", ln.Addr())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

// cards is the embedding program: one internal account pays for every card.
type cards struct {
	app  *mediajobs.App
	acct account.Account
	wait func()
}

// openCards opens mediajobs on dataDir, reachable at baseURL (for its signed links), and
// starts its background work until ctx ends.
func openCards(ctx context.Context, dataDir, baseURL string) (*cards, error) {
	cfg := mediajobs.DefaultConfig() // the defaults of `mediajobs serve`, then ours
	cfg.Data, cfg.BaseURL, cfg.Slots = dataDir, baseURL, 1
	a, err := mediajobs.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	acct, err := internalAccount(ctx, a)
	if err != nil {
		a.Close()
		return nil, err
	}
	wait, err := a.Start(ctx)
	if err != nil {
		a.Close()
		return nil, err
	}
	return &cards{app: a, acct: acct, wait: wait}, nil
}

// internalAccount is the program's own account, on the Pro plan, made once and kept by ID.
func internalAccount(ctx context.Context, a *mediajobs.App) (account.Account, error) {
	const id = "acc_cards"
	if acc, err := a.Store.GetAccount(ctx, id); err == nil {
		return acc, nil
	} else if !errors.Is(err, problem.ErrNotFound) {
		return account.Account{}, err
	}
	acc := account.Account{ID: id, Plan: account.PlanPro, CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}
	return acc, a.UC.Credits.OpenAccount(ctx, acc)
}

// Close waits for the background work (its context must have ended) and closes the service.
func (c *cards) Close() {
	c.wait()
	c.app.Close()
}

// Routes is the program's own router: its routes, plus mediajobs' file links.
func (c *cards) Routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /cards", c.create)
	mux.HandleFunc("GET /cards/{id}", c.get)
	mux.Handle("/dl/", c.app.Handler)
	mux.Handle("/v/", c.app.Handler)
	return mux
}

var (
	colorRE = regexp.MustCompile(`^[a-z]{3,20}$`)
	sizeRE  = regexp.MustCompile(`^[1-9][0-9]{1,3}x[1-9][0-9]{1,3}$`)
)

// create renders a card: the program checks its own input, then submits an ffmpeg job through
// the same use case (and submit gate) as POST /jobs.
func (c *cards) create(w http.ResponseWriter, r *http.Request) {
	var in struct{ Color, Size string }
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<10)).Decode(&in); err != nil ||
		!colorRE.MatchString(in.Color) || !sizeRE.MatchString(in.Size) {
		http.Error(w, `want {"color":"teal","size":"320x180"}`, http.StatusBadRequest)
		return
	}
	params, _ := json.Marshal(map[string]string{
		"command": fmt.Sprintf("ffmpeg -f lavfi -i color=c=%s:s=%s:d=1 -frames:v 1 card.png", in.Color, in.Size)})
	j, err := c.app.UC.Submit.Submit(r.Context(), c.acct, jobtype.Request{Type: "ffmpeg", Params: params})
	if p, ok := problem.As(err); ok {
		http.Error(w, string(p.Code)+": "+p.Message, http.StatusUnprocessableEntity)
		return
	} else if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"id": j.ID})
}

// get reports a card's job, with the PNG's signed link once it is done.
func (c *cards) get(w http.ResponseWriter, r *http.Request) {
	v, err := c.app.UC.Jobs.Get(r.Context(), c.acct, r.PathValue("id"))
	if err != nil {
		http.Error(w, "no such card", http.StatusNotFound)
		return
	}
	out := map[string]any{"status": v.Status}
	if v.Status == job.StatusComplete && v.Output != nil && v.Output.File != nil {
		out["png"] = v.Output.File.URL
		out["credits"] = v.Cost.Amount
	}
	if v.Error != nil {
		out["error"] = string(v.Error.Code) + ": " + v.Error.Message
	}
	writeJSON(w, http.StatusOK, out)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
