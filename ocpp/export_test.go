package ocpp

// Running returns how many goroutines of s, and handlers of its boxes' messages, run.
func Running(s *Service) int { return s.group.running() }
