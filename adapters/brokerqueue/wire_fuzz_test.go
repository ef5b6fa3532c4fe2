package brokerqueue

import (
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/mediajobs/mediajobs/core/workqueue"
)

// FuzzReadCall feeds the control plane calls as anyone who can publish on the broker might
// shape them: reading one never panics, and a call it accepts names a worker that is a valid
// reply address and an operation it knows.
func FuzzReadCall(f *testing.F) {
	f.Add("id-1", opClaim, "w1-00aa", soon(), `{"class":"cpu","max":2,"worker":"host/1","waitMs":20000}`)
	f.Add("id-2", opHeartbeat, "w1-00aa", soon(), `{"lease":{"jobId":"job_1","attempt":1,"token":"t"},"progress":0.5,"executing":true}`)
	f.Add("id-3", opReport, "w1-00aa", soon(), `{"lease":{"jobId":"job_1","attempt":1,"token":"t"},"result":{"computeMs":10,"failure":{"kind":"exit"}}}`)
	f.Add("", "", "", "", "")
	f.Add("id-4", opClaim, "a.b.>", "2026-01-02T03:04:05Z", `[1,2`)
	f.Fuzz(func(t *testing.T, id, op, worker, deadline, payload string) {
		m := message.NewMessage(id, []byte(payload))
		m.Metadata.Set(metaOp, op)
		m.Metadata.Set(metaWorker, worker)
		m.Metadata.Set(metaDeadline, deadline)
		c, err := readCall(m)
		if err != nil {
			return
		}
		if !workerIDPattern.MatchString(c.worker) || (c.op != opClaim && c.op != opHeartbeat && c.op != opReport) {
			t.Fatalf("accepted call %+v", c)
		}
		var (
			claim  claimBody
			beat   workqueue.Beat
			report reportBody
		)
		for _, v := range []any{&claim, &beat, &report} {
			_ = decodeStrict(c.payload, v)
		}
	})
}
