//go:build unix

package sqlite

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// walProbe watches the header of the database's WAL index (the "-shm" file every
// connection to a WAL database maps, https://www.sqlite.org/walformat.html): SQLite
// rewrites it on every commit, by any connection of any process, before the commit
// returns. Reading it costs two dozen memory loads and no system call, which lets the
// read cache check on every request that the database has not changed.
//
// The file is mapped read-only through a descriptor kept open until the store's
// connections are closed: closing any descriptor of a file drops every POSIX lock the
// process holds on it, SQLite's included.
type walProbe struct {
	f   *os.File
	mem []byte
}

// openWALProbe maps the header of path's WAL index. It fails when the file does not
// exist or is too short to hold an initialised header (no connection has read the
// database yet).
func openWALProbe(path string) (*walProbe, error) {
	f, err := os.Open(path + "-shm")
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil || fi.Size() < 2*4*walIndexHeaderWords {
		_ = f.Close()
		return nil, fmt.Errorf("WAL index %s-shm is not initialised (%v)", path, err)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, 2*4*walIndexHeaderWords, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("mapping %s-shm: %w", path, err)
	}
	return &walProbe{f: f, mem: mem}, nil
}

// version returns the current WAL-index header, which changes with every commit. ok is
// false while a commit is updating it, before it is initialised, and if the mapping
// cannot be read (the file was truncated): the caller then must not trust a cached
// read.
func (p *walProbe) version() (v walVersion, ok bool) {
	// A fault on the mapping (SIGBUS after a truncation) panics here instead of
	// killing the process.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	words := (*[2 * walIndexHeaderWords]uint32)(unsafe.Pointer(&p.mem[0]))
	// The header is kept twice, one copy after the other: a writer updates the second
	// copy, then the first, so copies that differ are read in the middle of a commit.
	var second walVersion
	for i := range walIndexHeaderWords {
		v[i] = atomic.LoadUint32(&words[i])
	}
	for i := range walIndexHeaderWords {
		second[i] = atomic.LoadUint32(&words[walIndexHeaderWords+i])
	}
	// Byte 12 of the header is isInit.
	initialised := *(*[4]byte)(unsafe.Pointer(&v[3]))
	return v, v == second && initialised[0] == 1
}

// close unmaps the header and closes the descriptor. Call it after the database's
// connections are closed.
func (p *walProbe) close() error {
	return errors.Join(syscall.Munmap(p.mem), p.f.Close())
}
