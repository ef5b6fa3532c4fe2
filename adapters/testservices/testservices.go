// Package testservices starts the servers the scale-out adapters are tested against (PostgreSQL,
// NATS JetStream, Redis) in containers of the images `make images` builds from Debian's
// packages, through testcontainers-go, for a machine that has a Docker Engine but not the
// servers themselves. Nothing is pulled: the images must be on the engine (testenv.Missing
// says so otherwise).
//
// testcontainers-go's reaper (Ryuk) is an image from a registry, which this project's machines
// cannot pull; it is turned off here unless the environment says otherwise, and each container
// is removed by the stop function its starter returns (make test also removes, by label, any a
// killed run left).
package testservices

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/mediajobs/mediajobs/adapters/testenv"
)

// The images, as scripts/images.sh tags them.
const (
	PostgresImage = "mediajobs/postgres:15"
	NATSImage     = "mediajobs/nats:2.9"
	RedisImage    = "mediajobs/redis:7"
)

func init() {
	if _, set := os.LookupEnv("TESTCONTAINERS_RYUK_DISABLED"); !set {
		_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	// A local engine publishes ports on this machine's loopback. testcontainers-go would
	// otherwise, when it finds itself in a container (as a CI job may be), take the default
	// route's gateway for the engine's address.
	if _, set := os.LookupEnv("TESTCONTAINERS_HOST_OVERRIDE"); !set {
		if h := os.Getenv("DOCKER_HOST"); h == "" || strings.HasPrefix(h, "unix://") {
			_ = os.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")
		}
	}
}

// startupTimeout bounds a server's start. PostgreSQL's first start runs initdb, which took over
// a minute on a 2-core machine busy with the rest of make test.
const startupTimeout = 3 * time.Minute

// Service is a started container and the address of its server.
type Service struct {
	// URL is where a client connects: a PostgreSQL DSN, nats://, redis://.
	URL       string
	container testcontainers.Container
}

// Stop removes the container.
func (s *Service) Stop(ctx context.Context) error {
	return testcontainers.TerminateContainer(s.container, testcontainers.StopContext(ctx))
}

// Postgres starts PostgreSQL with the settings of the development machines: user postgres,
// trust auth, database test. The URL is its DSN.
func Postgres(ctx context.Context) (*Service, error) { return PostgresWith(ctx) }

// PostgresWith is Postgres with more of testcontainers' options, such as OnHostPort.
func PostgresWith(ctx context.Context, opts ...testcontainers.ContainerCustomizer) (*Service, error) {
	opts = append([]testcontainers.ContainerCustomizer{
		testcontainers.WithEnv(map[string]string{"POSTGRES_USER": "postgres", "POSTGRES_DB": "test", "POSTGRES_HOST_AUTH_METHOD": "trust"}),
		// pg_isready inside the container is the readiness check; the port check only confirms
		// the mapping from here (its own check inside, an exec per poll, failed a loaded run).
		testcontainers.WithWaitStrategy(wait.ForAll(
			wait.ForListeningPort("5432/tcp").SkipInternalCheck().WithStartupTimeout(startupTimeout),
			wait.ForExec([]string{"pg_isready", "-h", "127.0.0.1", "-d", "test", "-q"}).WithStartupTimeout(startupTimeout),
		).WithDeadline(startupTimeout)),
	}, opts...)
	return start(ctx, PostgresImage, "5432/tcp", func(hostPort string) string {
		return "postgres://postgres@" + hostPort + "/test?sslmode=disable"
	}, opts...)
}

// OnHostPort publishes the container's port on this host port of loopback, which it keeps
// across a stop and start of the container (a test of a server that goes away and comes back);
// by default the engine picks a port, a new one at each start.
func OnHostPort(containerPort string, hostPort int) testcontainers.CustomizeRequestOption {
	return testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
		if hc.PortBindings == nil {
			hc.PortBindings = network.PortMap{}
		}
		hc.PortBindings[network.MustParsePort(containerPort)] = []network.PortBinding{
			{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: strconv.Itoa(hostPort)}}
	})
}

// NATS starts NATS with JetStream. The URL is nats://host:port.
func NATS(ctx context.Context) (*Service, error) {
	return start(ctx, NATSImage, "4222/tcp", func(hostPort string) string { return "nats://" + hostPort },
		testcontainers.WithWaitStrategy(wait.ForLog("Server is ready").WithStartupTimeout(startupTimeout)))
}

// Redis starts Redis, in memory only. The URL is redis://host:port/0.
func Redis(ctx context.Context) (*Service, error) {
	return start(ctx, RedisImage, "6379/tcp", func(hostPort string) string { return "redis://" + hostPort + "/0" },
		testcontainers.WithWaitStrategy(wait.ForLog("Ready to accept connections").WithStartupTimeout(startupTimeout)))
}

func start(ctx context.Context, image, port string, url func(hostPort string) string, opts ...testcontainers.ContainerCustomizer) (*Service, error) {
	opts = append([]testcontainers.ContainerCustomizer{testcontainers.WithExposedPorts(port),
		testcontainers.WithLabels(map[string]string{"io.mediajobs.test": "testservices"})}, opts...)
	c, err := testcontainers.Run(ctx, image, opts...)
	if err != nil {
		if c != nil {
			_ = testcontainers.TerminateContainer(c)
		}
		return nil, fmt.Errorf("testservices: start %s (make images builds it): %w", image, err)
	}
	hostPort, err := c.PortEndpoint(ctx, port, "")
	if err != nil {
		_ = testcontainers.TerminateContainer(c)
		return nil, fmt.Errorf("testservices: %s's port %s: %w", image, port, err)
	}
	return &Service{URL: url(hostPort), container: c}, nil
}

// ContainerID is the container's ID on the engine.
func (s *Service) ContainerID() string { return s.container.GetContainerID() }

// ForceContainers is the environment variable that makes Endpoint start containers even where
// the host's servers answer, so that a machine with both tests the container path too.
const ForceContainers = "MEDIAJOBS_TEST_SERVICES"

// shared holds the containers started for this test binary, one per image.
var shared struct {
	mu       sync.Mutex
	services map[string]*Service
	errs     map[string]error
}

// Endpoint is the server a test binary uses for one kind of service: hostURL when its hostAddr
// (host:port) accepts a connection and MEDIAJOBS_TEST_SERVICES is not "containers"; otherwise
// a container started by start, once for the whole binary, which lives until Close (or until
// make test removes it by label). The error says why neither could be had.
func Endpoint(hostURL, hostAddr string, start func(context.Context) (*Service, error), image string) (string, error) {
	if os.Getenv(ForceContainers) != "containers" {
		c, err := net.DialTimeout("tcp", hostAddr, time.Second)
		if err == nil {
			_ = c.Close()
			return hostURL, nil
		}
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if s, ok := shared.services[image]; ok {
		return s.URL, nil
	}
	if err, ok := shared.errs[image]; ok {
		return "", err
	}
	if shared.services == nil {
		shared.services, shared.errs = map[string]*Service{}, map[string]error{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), startupTimeout+time.Minute)
	defer cancel()
	s, err := start(ctx)
	if err != nil {
		err = fmt.Errorf("nothing answers at %s, and no container either: %w", hostAddr, err)
		shared.errs[image] = err
		return "", err
	}
	shared.services[image] = s
	return s.URL, nil
}

// NATSEndpoint is Endpoint for NATS: the local server on 127.0.0.1:4222, or a container.
func NATSEndpoint() (string, error) {
	return Endpoint("nats://127.0.0.1:4222", "127.0.0.1:4222", NATS, NATSImage)
}

// RedisEndpoint is Endpoint for Redis: the local server on 127.0.0.1:6379, or a container.
func RedisEndpoint() (string, error) {
	return Endpoint("redis://127.0.0.1:6379/0", "127.0.0.1:6379", Redis, RedisImage)
}

// Close removes the containers Endpoint started; a TestMain calls it after the tests.
func Close() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	for image, s := range shared.services {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = s.Stop(ctx)
		cancel()
		delete(shared.services, image)
	}
}

// RequireImage ends t (testenv.Missing) unless the engine holds image, which make images builds.
func RequireImage(t testing.TB, image string) {
	t.Helper()
	if out, err := exec.Command("docker", "image", "inspect", "--format", "{{.Id}}", image).CombinedOutput(); err != nil {
		testenv.Missing(t, "the Docker Engine and the image "+image+" (make images builds it)", strings.TrimSpace(string(out)))
	}
}
