package client_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"

	"github.com/mediajobs/mediajobs/contracts/client"
)

// Submit an FFmpeg job on a local file, wait for it and save what it wrote.
func Example() {
	ctx := context.Background()
	c, err := client.New("http://127.0.0.1:8080", os.Getenv("MEDIAJOBS_API_KEY"))
	if err != nil {
		log.Fatal(err)
	}
	in, err := c.UploadFile(ctx, "in.mp4")
	if err != nil {
		log.Fatal(err)
	}
	req, err := client.FFmpegJob{
		Command: "ffmpeg -i in.mp4 -vf scale=640:-2 out.mp4",
		Inputs:  map[string]any{"in.mp4": in.URL},
	}.Request()
	if err != nil {
		log.Fatal(err)
	}
	created, err := c.Submit(ctx, req)
	if err != nil {
		log.Fatal(err) // an *client.APIError: VALIDATION_ERROR, PLAN_LIMIT, ...
	}
	job, err := c.Wait(ctx, created.ID, client.WithProgress(func(j client.Job) {
		if j.Progress != nil {
			fmt.Printf("%s %.0f%%\n", j.Status, *j.Progress*100)
		}
	}))
	if err != nil {
		log.Fatal(err)
	}
	if job.Status != client.StatusComplete {
		log.Fatalf("%s: %s", job.Error.Code, job.Error.Message)
	}
	for _, f := range job.Output.Files {
		if _, err := c.Download(ctx, f, "out"); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("cost:", job.Cost.Formatted)
}

// A webhook receiver checks each delivery against the raw body before it trusts it.
func ExampleVerifyWebhook() {
	secrets := []string{os.Getenv("WEBHOOK_SECRET")} // add the old one while you rotate
	http.HandleFunc("/hooks/mediajobs", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "read error", http.StatusBadRequest)
			return
		}
		if err := client.VerifyWebhook(r.Header, body, secrets...); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		// Deduplicate on X-Service-Delivery, then handle the event.
		w.WriteHeader(http.StatusNoContent)
	})
}
