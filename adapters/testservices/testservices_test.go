package testservices_test

import (
	"context"
	"database/sql"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/mediajobs/mediajobs/adapters/testenv"
	"github.com/mediajobs/mediajobs/adapters/testservices"
)

// TestServices starts each server from its image and talks to it as the adapters do; the
// container is gone afterwards.
func TestServices(t *testing.T) {
	t.Parallel()
	if out, err := exec.Command("docker", "info").CombinedOutput(); err != nil {
		testenv.Missing(t, "the Docker Engine (docker info)", strings.TrimSpace(string(out)))
	}
	tests := []struct {
		name  string
		image string
		start func(context.Context) (*testservices.Service, error)
		use   func(t *testing.T, ctx context.Context, url string)
	}{
		{"Postgres", testservices.PostgresImage, testservices.Postgres, func(t *testing.T, ctx context.Context, url string) {
			db := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(url)))
			defer db.Close()
			var got string
			if err := db.QueryRowContext(ctx, "SELECT current_database() || ' ' || current_user").Scan(&got); err != nil || got != "test postgres" {
				t.Fatalf("current database and user = %q, %v; want test postgres", got, err)
			}
		}},
		{"NATS", testservices.NATSImage, testservices.NATS, func(t *testing.T, ctx context.Context, url string) {
			nc, err := nats.Connect(url)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			js, err := nc.JetStream()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := js.AccountInfo(); err != nil {
				t.Fatalf("JetStream is not on: %v", err)
			}
		}},
		{"Redis", testservices.RedisImage, testservices.Redis, func(t *testing.T, ctx context.Context, url string) {
			opts, err := redis.ParseURL(url)
			if err != nil {
				t.Fatal(err)
			}
			rc := redis.NewClient(opts)
			defer rc.Close()
			if err := rc.Ping(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			testservices.RequireImage(t, tt.image)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			s, err := tt.start(ctx)
			if err != nil {
				t.Fatal(err)
			}
			tt.use(t, ctx, s.URL)
			id := s.ContainerID()
			if err := s.Stop(ctx); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			if out, err := exec.Command("docker", "inspect", id).CombinedOutput(); err == nil {
				t.Errorf("container %s remains after Stop: %s", id, out[:min(len(out), 200)])
			}
		})
	}
}
