package bus_test

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mediajobs/mediajobs/adapters/bus"
	"github.com/mediajobs/mediajobs/adapters/bus/bustest"
)

const natsURL = "nats://127.0.0.1:4222"

// natsStream returns a stream of the test's own, deleted when the test ends; it skips the test
// when no NATS server answers on loopback.
func natsStream(t testing.TB) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", "127.0.0.1:4222", time.Second)
	if err != nil {
		t.Skipf("NATS JetStream bus not tested: no server on 127.0.0.1:4222 (scripts/services.sh starts one): %v", err)
	}
	conn.Close()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	stream := "BUSTEST_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		nc, err := nats.Connect(natsURL)
		if err != nil {
			t.Errorf("delete stream %s: %v", stream, err)
			return
		}
		defer nc.Close()
		js, err := nc.JetStream()
		if err == nil {
			err = js.DeleteStream(stream)
		}
		if err != nil {
			t.Errorf("delete stream %s: %v", stream, err)
		}
	})
	return stream
}

func TestNATS(t *testing.T) {
	t.Parallel()
	stream := natsStream(t)
	bustest.Exercise(t, func(t *testing.T) *bus.Bus {
		b, err := bus.OpenNATS(bus.NATSConfig{URL: natsURL, Stream: stream}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	}, bustest.Features{Shared: true})
}
