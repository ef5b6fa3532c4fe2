package service

// Watching is how many waits are on job id now; a job no one waits on has no entry.
func (s *Waits) Watching(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.changed[id]; ok {
		return w.n
	}
	return 0
}

// Entries is how many jobs have waits on them.
func (s *Waits) Entries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.changed)
}

// Accounts is how many accounts hold waits.
func (s *Waits) Accounts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.accounts)
}

// PartsWatching is how many heartbeats of split job id wait for its parts now.
func (s *Runs) PartsWatching(id string) int { return s.parts.Watching(id) }
