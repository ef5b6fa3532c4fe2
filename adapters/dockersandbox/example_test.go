package dockersandbox_test

import (
	"context"
	"fmt"

	"github.com/mediajobs/mediajobs/adapters/dockersandbox"
	"github.com/mediajobs/mediajobs/adapters/sandbox"
)

// A GPU worker started with `--sandbox docker` builds its sandbox once, checks it, and hands
// it to the runner as a sandbox.Runner.
func ExampleNew() {
	ctx := context.Background()
	sb, err := dockersandbox.New(dockersandbox.Config{
		Image: dockersandbox.DefaultImage,
		GPU:   &dockersandbox.GPU{}, // every GPU, through the NVIDIA Container Toolkit
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()
	if err := sb.Available(ctx); err != nil {
		fmt.Println(err)
		return
	}
	if err := sb.CheckGPU(ctx); err != nil {
		fmt.Println(err) // names the missing device node, library or encoder
		return
	}
	var runner sandbox.Runner = sb
	_ = runner
}
