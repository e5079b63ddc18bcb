//go:build !unix

package sqlite

import "errors"

// walProbe is not available on this system: the read cache stays off.
type walProbe struct{}

func openWALProbe(string) (*walProbe, error) {
	return nil, errors.New("the WAL index cannot be mapped on this system")
}

func (*walProbe) version() (walVersion, bool) { return walVersion{}, false }

func (*walProbe) close() error { return nil }
