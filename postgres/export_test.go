package postgres

// ListeningForTest reports whether the store's listener (see OnEvents) listens.
func (s *Store) ListeningForTest() bool { return s.listening.Load() }
