package ratelimit

// Keys is how many keys m holds, for the tests of MaxKeys.
func (m *Memory) Keys() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.tat)
}
