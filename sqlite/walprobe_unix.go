//go:build unix

package sqlite

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// walProbe watches the header of the database's WAL index (the "-shm" file every
// connection to a WAL database maps, https://www.sqlite.org/walformat.html): SQLite
// rewrites it on every commit, by any connection of any process, before the commit
// returns. Reading it costs two dozen memory loads and no system call, which lets the
// read cache check on every request that the database has not changed.
//
// The file is mapped read-only through a descriptor of its own, and closing any
// descriptor of a file drops every POSIX lock the process holds on it, SQLite's
// included. So there is one probe per file and process, shared by the stores open on
// it, and its descriptor is closed only when the last of them has closed its
// connections.
type walProbe struct {
	path string // of the -shm file
	id   fileID
	f    *os.File
	mem  []byte
	refs int // stores using the probe; guarded by probes.mu

	// stale is set once the path no longer names the mapped file (it was deleted or
	// replaced, as SQLite does when the last connection anywhere closes): the mapping
	// then shows no commit, and the cache must stay off. Checked every
	// walProbeCheckInterval.
	stale     atomic.Bool
	nextCheck atomic.Int64 // unix nanoseconds
}

type fileID struct{ dev, ino uint64 }

// walProbeCheckInterval is how often a probe checks that its path still names the file
// it maps.
const walProbeCheckInterval = 100 * time.Millisecond

var probes struct {
	mu     sync.Mutex
	byFile map[fileID]*walProbe
}

func idOf(fi os.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{uint64(st.Dev), uint64(st.Ino)}, true //nolint:unconvert // field types differ across systems
}

// openWALProbe returns the probe of path's WAL index, mapping it if no store of this
// process has. It fails when the file does not exist or is too short to hold an
// initialised header (no connection has read the database yet). Release it with close.
func openWALProbe(path string) (*walProbe, error) {
	shm := path + "-shm"
	probes.mu.Lock()
	defer probes.mu.Unlock()
	// By name first: opening and closing a second descriptor would drop the locks.
	if fi, err := os.Stat(shm); err == nil {
		if id, ok := idOf(fi); ok && probes.byFile[id] != nil {
			p := probes.byFile[id]
			p.refs++
			return p, nil
		}
	}
	f, err := os.Open(shm)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil || fi.Size() < 2*4*walIndexHeaderWords {
		_ = f.Close()
		return nil, fmt.Errorf("WAL index %s is not initialised (%v)", shm, err)
	}
	id, ok := idOf(fi)
	if !ok {
		_ = f.Close()
		return nil, fmt.Errorf("WAL index %s: no file identity", shm)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, 2*4*walIndexHeaderWords, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("mapping %s: %w", shm, err)
	}
	p := &walProbe{path: shm, id: id, f: f, mem: mem, refs: 1}
	if probes.byFile == nil {
		probes.byFile = make(map[fileID]*walProbe)
	}
	probes.byFile[id] = p
	return p, nil
}

// version returns the current WAL-index header, which changes with every commit. ok is
// false while a commit is updating it, before it is initialised, once the probe is
// stale, and if the mapping cannot be read (the file was truncated): the caller then
// must not trust a cached read.
func (p *walProbe) version() (v walVersion, ok bool) {
	if now := time.Now().UnixNano(); now >= p.nextCheck.Load() {
		p.nextCheck.Store(now + int64(walProbeCheckInterval))
		if fi, err := os.Stat(p.path); err != nil {
			p.stale.Store(true)
		} else if id, ok := idOf(fi); !ok || id != p.id {
			p.stale.Store(true)
		}
	}
	if p.stale.Load() {
		return v, false
	}
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

// close releases the store's use of the probe; the last release unmaps the header and
// closes the descriptor. Call it after the store's connections are closed.
func (p *walProbe) close() error {
	probes.mu.Lock()
	defer probes.mu.Unlock()
	if p.refs--; p.refs > 0 {
		return nil
	}
	if probes.byFile[p.id] == p {
		delete(probes.byFile, p.id)
	}
	return errors.Join(syscall.Munmap(p.mem), p.f.Close())
}
