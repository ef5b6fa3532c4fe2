package bus

import "testing"

func TestNATSSubject(t *testing.T) {
	t.Parallel()
	tests := []struct {
		topic, want string
	}{
		{"jobs.cancel", "mediajobs.jobs.cancel"},
		{"jobs.dispatch.cpu", "mediajobs.jobs.dispatch.cpu"},
		{"batch.job_done", "mediajobs.batch.job_done"},
		{"a*b.>", "mediajobs.a_b._"},
		{"with space", "mediajobs.with_space"},
		{".x..y.", "mediajobs._.x._.y._"},
		{"", "mediajobs._"},
	}
	for _, tt := range tests {
		t.Run(tt.topic, func(t *testing.T) {
			t.Parallel()
			if got := natsSubject("mediajobs", tt.topic); got != tt.want {
				t.Errorf("natsSubject(%q) = %q, want %q", tt.topic, got, tt.want)
			}
		})
	}
}
