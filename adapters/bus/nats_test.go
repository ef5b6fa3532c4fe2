package bus_test

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/mediajobs/mediajobs/adapters/bus"
	"github.com/mediajobs/mediajobs/adapters/bus/bustest"

	"github.com/mediajobs/mediajobs/adapters/testenv"
	"github.com/mediajobs/mediajobs/adapters/testservices"
)

// natsServer is the NATS of the test binary: the local one on 127.0.0.1:4222, or a container.
var natsServer = sync.OnceValues(testservices.NATSEndpoint)

// natsURL is natsServer's URL; natsStream has made sure there is one.
func natsURL() string { u, _ := natsServer(); return u }

// natsStream returns a stream of the test's own, deleted when the test ends; the test ends
// (testenv.Missing) when there is no NATS server.
func natsStream(t testing.TB) string {
	t.Helper()
	if _, err := natsServer(); err != nil {
		testenv.Missing(t, "NATS JetStream on 127.0.0.1:4222 (scripts/services.sh starts it)", err)
	}
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	stream := "BUSTEST_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		nc, err := nats.Connect(natsURL())
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
	bustest.TestBus(t, bustest.Features{Shared: true}, func(t *testing.T) *bus.Bus {
		b, err := bus.OpenNATS(bus.NATSConfig{URL: natsURL(), Stream: stream}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	})
}
