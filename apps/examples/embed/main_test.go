package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCards runs the embedding program for real: its own routes submit a job through the
// use cases, the sandboxed runner renders it with FFmpeg, and the PNG comes back through
// mediajobs' signed link on the program's router.
func TestCards(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	c, err := openCards(ctx, dir, base)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	srv := &http.Server{Handler: c.Routes()}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		cancel()
		c.Close()
	})

	if res := post(t, base+"/cards", `{"color":"teal","size":"-1x2"}`); res.StatusCode != http.StatusBadRequest {
		t.Errorf("a bad size: %d", res.StatusCode)
	}
	res := post(t, base+"/cards", `{"color":"teal","size":"64x36"}`)
	var created struct{ ID string }
	if res.StatusCode != http.StatusAccepted || json.NewDecoder(res.Body).Decode(&created) != nil || !strings.HasPrefix(created.ID, "job_") {
		t.Fatalf("POST /cards: %d %+v", res.StatusCode, created)
	}
	var card struct {
		Status, PNG, Error string
		Credits            int
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) { // a poll, as a client polls
		r, err := http.Get(base + "/cards/" + created.ID)
		if err != nil {
			t.Fatal(err)
		}
		_ = json.NewDecoder(r.Body).Decode(&card)
		_ = r.Body.Close()
		if card.Status == "complete" || card.Status == "failed" || time.Now().After(deadline) {
			break
		}
	}
	if card.Status != "complete" || !strings.HasPrefix(card.PNG, base+"/dl/") || card.Credits < 1 {
		t.Fatalf("card: %+v", card)
	}
	r, err := http.Get(card.PNG)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	png, _ := io.ReadAll(r.Body)
	if r.StatusCode != http.StatusOK || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("GET %s: %d, %d bytes", card.PNG, r.StatusCode, len(png))
	}
}

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = res.Body.Close() })
	return res
}
