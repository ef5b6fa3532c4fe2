package clocktest_test

import (
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/core/clock"
	"github.com/mediajobs/mediajobs/core/clock/clocktest"
)

func TestFake(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var c clock.Clock = clocktest.New(t0)
	c.(*clocktest.Fake).Advance(5 * time.Second)
	if got := c.Now(); !got.Equal(t0.Add(5 * time.Second)) {
		t.Fatalf("Now = %v", got)
	}
	c.(*clocktest.Fake).Set(t0)
	if !c.Now().Equal(t0) {
		t.Fatal("Set did not move the clock")
	}
}
