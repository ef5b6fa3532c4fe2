package safehttp_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/mediajobs/mediajobs/adapters/safehttp"
)

// The runner downloads each job input through the guarded client; a refused address becomes the
// job's INPUT_FETCH_FAILED error.
func ExampleDownload() {
	allow, err := safehttp.ParseAllowList(os.Getenv("MEDIAJOBS_ALLOW_PRIVATE_NETWORKS"))
	if err != nil {
		fmt.Println(err)
		return
	}
	client := safehttp.NewClient(safehttp.Config{AllowPrivate: allow})
	_, err = safehttp.Download(context.Background(), client, "https://media.example/in.mp4", "/var/lib/mediajobs/work/job_123/in.mp4", 5<<30)
	if errors.Is(err, safehttp.ErrBlockedAddress) || errors.Is(err, safehttp.ErrTooLarge) {
		fmt.Println("INPUT_FETCH_FAILED:", err)
	}
}
