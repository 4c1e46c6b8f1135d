package sandbox

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/internal/privfile"
	"github.com/airlock-run/airlock/internal/starttrace"
)

// The box's /etc is a few dozen of the host's files and directories
// (etcFiles) and six files airlock writes (etcGenerated). Bound one by one,
// each costs bubblewrap a mount, a remount and a reading of the whole
// mount table: about a third of a bare bubblewrap's start for /etc alone.
// The view is the same when it is one directory holding copies of exactly
// those files, bound once: the etc view. It is assembled in airlock's state
// directory (CacheConfig.EtcViewDir) from the same pinned descriptors the binds would
// take, kept by content, and bound read-only at /etc.
//
// The view is a snapshot: what a copy holds is what the pinned file held
// when the view was made. It is used again only while every source is
// unchanged: the key holds each source's identity (path, device, inode,
// mode, owner, size, times) and the generated files' content; the view's
// record holds the identity of every directory and regular file beneath
// each source (a directory whose entries change changes its own times, a
// symbolic link cannot change in place), checked before every use, and a
// view made while a source had just changed (within etcRacyWindow, below
// the file system's clock resolution) is not kept. The view itself is
// trusted only as airlock's own: its directory is reached through privfile
// (no link on the way, this user's, writable by no one else, never among
// the box's writable paths; the wiring counts it among the private paths a
// box may never be granted), its record is read by privfile, and every
// directory and regular file of the view is checked against the record
// (inode and change time), so a copy changed after it was made is never
// bound. Anything else falls back to the per-file binds.
//
// Copies keep what the box could see of each file: type, content, link
// target, mode bits and times, and owner and group when airlock runs as
// root. A box that runs as another user (airlock as root on that user's
// checkout) gets the per-file binds: bubblewrap, started as that user,
// could not reach the view through airlock's state directory.
// Run as another user airlock cannot give a copy the source's owner; the
// copy's owner bits are then the bits that applied to the box's user on the
// source (owner's, group's or others'), so the box may read and run exactly
// what it could before. A file the box could not read cannot be copied, and
// a source holding anything but directories, regular files and links
// (a socket, a device, a pipe) is not copied either: both fall back.

// etcViewVersion changes whenever what a view holds or how it is checked
// changes, so a view made by an older airlock is never taken for current.
const etcViewVersion = "airlock-etc-view-1"

// Bounds on a view: the JDK's and the CA store's directories are the
// largest sources (hundreds of entries, under a megabyte).
const (
	maxEtcEntries = 20000
	maxEtcBytes   = 64 << 20
	maxEtcDepth   = 24
	maxEtcRecord  = 16 << 20
	// etcViewsKept is how many views (for different users, homes or
	// hosts' /etc) are kept; older ones are removed when a new one is made.
	etcViewsKept = 8
)

// etcRacyWindow: a source changed this recently may change again within
// the same tick of the file system's clock, unseen (a variable for tests).
var etcRacyWindow = 2 * time.Second

// RemoveEtcCache removes a view directory (CacheConfig.EtcViewDir) and every view
// in it (copies of read-only directories are read-only too), never
// following a link.
func RemoveEtcCache(dir string) {
	fd, err := unix.Open(filepath.Dir(dir), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	removeTree(fd, filepath.Base(dir))
}

// etcSource is one of etcFiles as the box sees it: box is its path there,
// pn the host file pinned for it.
type etcSource struct {
	box string
	pn  *pinned
	st  unix.Stat_t
}

// etcGen is a file airlock writes into /etc.
type etcGen struct{ box, content string }

// etcStamp is the identity of one directory or regular file, beneath a
// source or the view (Rel "" is the top).
type etcStamp struct {
	Rel string
	// ID is the device, inode, mode, size and times, as one string.
	ID string
}

func stampOf(rel string, st *unix.Stat_t) etcStamp {
	var buf [stampIDMax]byte
	return etcStamp{Rel: rel, ID: string(appendStampID(buf[:0], st))}
}

// stampIDMax bounds an identity: six numbers of up to 16 hex digits and
// the spaces between them.
const stampIDMax = 6*17 - 1

// appendStampID appends the identity of st (etcStamp.ID) to b.
func appendStampID(b []byte, st *unix.Stat_t) []byte {
	for i, n := range [...]uint64{uint64(st.Dev), st.Ino, uint64(st.Mode), uint64(st.Size), uint64(st.Mtim.Nano()), uint64(st.Ctim.Nano())} {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendUint(b, n, 16)
	}
	return b
}

// etcRecord is kept beside a view: what every source held when it was
// copied, and what the view is. It is kept as lines of text (encodeRecord),
// which read in a tenth of the time JSON takes on every start.
type etcRecord struct {
	Key     string
	Sources [][]etcStamp // in the order of the key
	View    []etcStamp
}

// encodeRecord writes r as lines: the version, the key, then one line per
// stamp, "S<i>" (of source i) or "V" (of the view), its identity and its
// path, tab-separated. A path holding a tab or a newline is not kept.
func encodeRecord(r etcRecord) ([]byte, bool) {
	var b strings.Builder
	b.WriteString(etcViewVersion + "\n" + r.Key + "\n")
	line := func(tag string, s etcStamp) bool {
		if strings.ContainsAny(s.Rel, "\t\n") {
			return false
		}
		b.WriteString(tag + "\t" + s.ID + "\t" + s.Rel + "\n")
		return true
	}
	for i, src := range r.Sources {
		tag := "S" + strconv.Itoa(i)
		for _, s := range src {
			if !line(tag, s) {
				return nil, false
			}
		}
	}
	for _, s := range r.View {
		if !line("V", s) {
			return nil, false
		}
	}
	return []byte(b.String()), true
}

// recordStamps returns the stamp lines of data when it is what
// encodeRecord wrote for key and n sources: the version, the key, then
// lines of "V" or "S<i>" (i below n), every source and the view with one
// at least. The lines are checked in place (eachStamp), not copied out:
// a start allocates, and so faults in, little more than it reads.
func recordStamps(data, key string, n int) (string, bool) {
	body, ok := strings.CutPrefix(data, etcViewVersion+"\n"+key+"\n")
	if !ok || !strings.HasSuffix(body, "\n") {
		return "", false
	}
	seen := make([]bool, n)
	view := false
	if !eachStamp(body, n, func(src int, _, _ string) bool {
		if src < 0 {
			view = true
		} else {
			seen[src] = true
		}
		return true
	}) || !view {
		return "", false
	}
	for _, ok := range seen {
		if !ok {
			return "", false
		}
	}
	return body, true
}

// eachStamp calls f with every stamp line of body (lines ending in a
// newline): the source's index (-1 for the view), the path and the
// identity. It reports whether every line was well formed and f accepted
// it, stopping at the first that is not.
func eachStamp(body string, n int, f func(src int, rel, id string) bool) bool {
	for rest := body; rest != ""; {
		var l string
		l, rest, _ = strings.Cut(rest, "\n")
		tag, after, ok1 := strings.Cut(l, "\t")
		id, rel, ok2 := strings.Cut(after, "\t")
		if !ok1 || !ok2 {
			return false
		}
		src := -1
		if tag != "V" {
			i, err := strconv.Atoi(strings.TrimPrefix(tag, "S"))
			if err != nil || !strings.HasPrefix(tag, "S") || i < 0 || i >= n {
				return false
			}
			src = i
		}
		if !f(src, rel, id) {
			return false
		}
	}
	return true
}

// errNoView is why a view could not be used; the caller binds file by file.
type errNoView struct{ why string }

func (e *errNoView) Error() string { return "etc view: " + e.why }

func noView(format string, a ...any) error { return &errNoView{fmt.Sprintf(format, a...)} }

// etcView binds the box's whole /etc, sources and generated files, as one
// view from the cache, or returns why it cannot (nothing bound then).
func (p *planner) etcView(etcDir *pinned, srcs []etcSource, gens []etcGen) error {
	defer starttrace.Begin("etc-view")()
	// The kernel's own list (Spec.Caches): another kernel of this
	// process may let its boxes write elsewhere.
	dir := p.spec.Caches.etcViewDir()
	boxWritable := append(slices.Clone(p.spec.Caches.boxWritable()), p.writable...)
	if dir == "" {
		return noView("no cache directory")
	}
	if p.runAs != nil {
		// bubblewrap, started as that user, resolves the view's path
		// through airlock's state directory, which only airlock may enter.
		return noView("the box runs as uid %d, who may not enter airlock's state directory", p.runAs.UID)
	}
	if w := withinAny(filepath.Clean(dir), p.writable); w != "" {
		return noView("the cache %s lies in the writable directory %s", dir, w)
	}
	base, err := privfile.OpenDir(dir, privfile.Options{MakeDirs: true, BoxWritable: boxWritable})
	if err != nil {
		return noView("%v", err)
	}
	defer base.Close()
	uid, gid := p.boxIDs()
	key := etcKey(srcs, gens, uid, gid)
	recPath := filepath.Join(base.Name(), key+".rec")
	opts := privfile.Options{BoxWritable: boxWritable}
	name := key
	lock, st, err := openView(base, key, srcs, opts)
	if err != nil {
		lock, st, name, err = buildOnce(etcDir, base, key, recPath, srcs, gens, uid, gid, opts, p.writable)
		if err != nil {
			return err
		}
	}
	// The view's directory, pinned like any bind but from base, whose
	// path privfile resolved and checked on the way; its identity must
	// be the one just checked.
	from := &pinned{f: base, real: base.Name(), mode: unix.S_IFDIR}
	pn, err := pinFrom(from, filepath.Join(base.Name(), name), p.writable)
	if err != nil {
		lock.Close()
		return noView("%v", err)
	}
	if pn.dev != uint64(st.Dev) || pn.ino != st.Ino {
		pn.f.Close()
		lock.Close()
		return noView("the view changed while it was checked")
	}
	p.box.keep = append(p.box.keep, lock) // a shared lock: no run removes it meanwhile
	p.bindFD(pn, "/etc", false, 2)
	// What lies at the same place on the host (CheckCommand): the sources
	// not reached through a link.
	for _, s := range srcs {
		if s.pn.real == s.box {
			p.bound = append(p.bound, s.box)
		}
	}
	p.box.Notes = append(p.box.Notes, "/etc is airlock's view of the host's files listed for a box, copied when they change, bound read-only at once")
	return nil
}

// etcBuilding is held while a plan of this process builds a view: plans
// made at once that find none (a pool starting boxes side by side) would
// each build and keep their own, whose inodes differ, and so would the
// fingerprints of boxes that are the same.
var etcBuilding sync.Mutex

// buildOnce builds the view key, unless another plan of this process has
// built and recorded it while this one waited: that one is opened and
// checked as any kept view (openView), never used before it is whole.
func buildOnce(etcDir *pinned, base *os.File, key, recPath string, srcs []etcSource, gens []etcGen, uid, gid int, opts privfile.Options, writable []string) (*os.File, unix.Stat_t, string, error) {
	etcBuilding.Lock()
	defer etcBuilding.Unlock()
	if lock, st, err := openView(base, key, srcs, opts); err == nil {
		return lock, st, key, nil
	}
	defer starttrace.Begin("etc-view-build")()
	// The copies are read through descriptors of the sources.
	if err := openEtcSources(etcDir, srcs, writable); err != nil {
		var st unix.Stat_t
		return nil, st, "", err
	}
	return buildView(base, key, recPath, srcs, gens, uid, gid, opts)
}

// etcKey names the view of srcs and gens for a box of uid and gid.
// The text hashed is, for the version, the process's and the box's ids,
// each source and each generated file:
//
//	<version>\x00euid=%d uid=%d gid=%d\x00
//	src %q %q dev=%d ino=%d mode=%o uid=%d gid=%d size=%d mtime=%d ctime=%d\x00
//	gen %q %d %s\x00
//
// appended with strconv into one buffer (fmt took a tenth of a plan).
func etcKey(srcs []etcSource, gens []etcGen, uid, gid int) string {
	b := make([]byte, 0, 256*(1+len(srcs)+len(gens)))
	num := func(name string, n int64) []byte {
		b = append(b, name...)
		return strconv.AppendInt(b, n, 10)
	}
	b = append(append(b, etcViewVersion...), 0)
	b = num("euid=", int64(os.Geteuid()))
	b = num(" uid=", int64(uid))
	b = append(num(" gid=", int64(gid)), 0)
	for _, s := range srcs {
		st := &s.st
		b = strconv.AppendQuote(append(b, "src "...), s.box)
		b = strconv.AppendQuote(append(b, ' '), s.pn.real)
		b = strconv.AppendUint(append(b, " dev="...), st.Dev, 10)
		b = strconv.AppendUint(append(b, " ino="...), st.Ino, 10)
		b = strconv.AppendUint(append(b, " mode="...), uint64(st.Mode), 8)
		b = num(" uid=", int64(st.Uid))
		b = num(" gid=", int64(st.Gid))
		b = num(" size=", st.Size)
		b = num(" mtime=", st.Mtim.Nano())
		b = append(num(" ctime=", st.Ctim.Nano()), 0)
	}
	for _, g := range gens {
		b = strconv.AppendQuote(append(b, "gen "...), g.box)
		b = append(append(append(num(" ", int64(len(g.content))), ' '), g.content...), 0)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// openView opens the kept view key and checks it against its record and
// its sources; it returns the view's directory, read-only and holding a
// shared lock, and its identity.
func openView(base *os.File, key string, srcs []etcSource, opts privfile.Options) (*os.File, unix.Stat_t, error) {
	var st unix.Stat_t
	// The record beside the view, in base as privfile checked it: the
	// walk from "/" is not made twice.
	data, err := privfile.ReadFileAt(base, key+".rec", maxEtcRecord, opts)
	if err != nil {
		return nil, st, noView("no record")
	}
	body, ok := recordStamps(string(data), key, len(srcs))
	if !ok {
		return nil, st, noView("record does not match")
	}
	changed := -1
	if !eachStamp(body, len(srcs), func(src int, rel, id string) bool {
		if src < 0 {
			return true
		}
		s := &srcs[src]
		// A source only stat (etcFileAt) is a regular file: it has no
		// stamp beneath it, and none can hold for it (no descriptor).
		fd := -1
		if s.pn.f != nil {
			fd = int(s.pn.f.Fd())
		}
		if (fd < 0 && rel != "") || !stampHolds(fd, &s.st, rel, id) {
			changed = src
			return false
		}
		return true
	}) {
		if changed < 0 { // recordStamps checked every line's form
			return nil, st, noView("record does not match")
		}
		return nil, st, noView("%s changed", srcs[changed].box)
	}
	lock, err := lockView(int(base.Fd()), key)
	if err != nil {
		return nil, st, err
	}
	fd := int(lock.Fd())
	if !eachStamp(body, len(srcs), func(src int, rel, id string) bool {
		return src >= 0 || stampHolds(fd, nil, rel, id)
	}) {
		lock.Close()
		return nil, st, noView("the view is not as it was made")
	}
	if err := unix.Fstat(fd, &st); err != nil {
		lock.Close()
		return nil, st, noView("stat: %v", err)
	}
	return lock, st, nil
}

// lockView opens the view key in bfd and takes its shared lock. The lock
// comes before any check of the view: a run removing a view takes the lock
// exclusively first, so a view checked under the lock stays whole.
func lockView(bfd int, key string) (*os.File, error) {
	fd, err := unix.Openat(bfd, key, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, noView("open: %v", err)
	}
	lock := os.NewFile(uintptr(fd), key)
	if err := unix.Flock(fd, unix.LOCK_SH); err != nil {
		lock.Close()
		return nil, noView("lock: %v", err)
	}
	return lock, nil
}

// stampHolds reports whether the stamp of rel and id still describes
// what lies beneath dirfd (rel "" is dirfd itself). top, when not nil, is
// dirfd's stat taken by this run already (pin's, which the view's key is
// made of): the stamp "" is checked against it rather than stat again.
func stampHolds(dirfd int, top *unix.Stat_t, rel, id string) bool {
	var st unix.Stat_t
	var err error
	switch {
	case rel == "" && top != nil:
		st = *top
	case rel == "":
		err = unix.Fstat(dirfd, &st)
	default:
		err = unix.Fstatat(dirfd, rel, &st, unix.AT_SYMLINK_NOFOLLOW)
	}
	var buf [stampIDMax]byte
	return err == nil && string(appendStampID(buf[:0], &st)) == id
}

// buildView copies srcs and writes gens into a new view key, records it
// and returns it opened and locked as openView does, with the name it has
// in the cache: key, or its own temporary name while another run binds the
// view kept under key (see placeView).
func buildView(base *os.File, key, recPath string, srcs []etcSource, gens []etcGen, uid, gid int, opts privfile.Options) (*os.File, unix.Stat_t, string, error) {
	var st unix.Stat_t
	bfd := int(base.Fd())
	tmp := "tmp-" + randomName()
	if err := unix.Mkdirat(bfd, tmp, 0o700); err != nil {
		return nil, st, "", noView("mkdir: %v", err)
	}
	c := &etcCopier{euid: os.Geteuid(), groups: ownGroups(), uid: uid, gid: gid}
	rec := etcRecord{Key: key}
	err := func() error {
		rfd, err := unix.Openat(bfd, tmp, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return noView("open: %v", err)
		}
		defer unix.Close(rfd)
		for _, s := range srcs {
			stamps, err := c.source(rfd, s)
			if err != nil {
				return err
			}
			// The change time, which no one can set (a modification
			// time can be put in the future).
			if time.Since(time.Unix(0, c.newest)) < etcRacyWindow {
				return noView("%s changed a moment ago", s.box)
			}
			rec.Sources = append(rec.Sources, stamps)
		}
		for _, g := range gens {
			if err := c.generated(rfd, g); err != nil {
				return err
			}
		}
		return c.finishDirs(rfd)
	}()
	name := tmp
	if err == nil {
		name, err = placeView(bfd, tmp, key)
	}
	if err != nil {
		removeTree(bfd, tmp)
		return nil, st, "", err
	}
	lock, err := lockView(bfd, name)
	if err != nil {
		return nil, st, "", err
	}
	fd := int(lock.Fd())
	// The view's stamps are taken after the rename (which changes the
	// top's change time), under the lock.
	if rec.View, err = stampTree(fd); err != nil {
		lock.Close()
		return nil, st, "", err
	}
	if err := unix.Fstat(fd, &st); err != nil {
		lock.Close()
		return nil, st, "", noView("stat: %v", err)
	}
	if name != key {
		// A view for this run alone: a later prune removes it once the
		// run let go of it.
		return lock, st, name, nil
	}
	if data, ok := encodeRecord(rec); ok {
		// Failing to keep it only makes the next start slower.
		privfile.WriteFile(recPath, data, 0o600, opts)
	}
	pruneViews(bfd, key)
	return lock, st, key, nil
}

// placeView renames the view made at tmp to key: it takes its place whole,
// or not at all, and returns the name the view has. A view already there
// with that key is another run's (the same content) or a stale one. It is
// moved aside only when no run holds it: bubblewrap mounts a bind by its
// path and then checks the mount is the descriptor's, so moving a view a
// run is binding would fail that run's box. A view held stays, and the new
// one is this run's alone, under tmp.
func placeView(bfd int, tmp, key string) (string, error) {
	err := unix.Renameat2(bfd, tmp, bfd, key, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EEXIST) {
		if !moveAsideIfFree(bfd, key) {
			return tmp, nil
		}
		err = unix.Renameat2(bfd, tmp, bfd, key, unix.RENAME_NOREPLACE)
	}
	if err != nil {
		return "", noView("rename: %v", err)
	}
	return key, nil
}

// moveAsideIfFree moves the view name aside and removes it, unless a run
// holds it (its shared lock): it reports whether name is gone. The
// exclusive lock is held across the move, so no run takes the view in
// between; a run waiting for its shared lock meanwhile finds the view
// moved when it pins the path, and binds none.
func moveAsideIfFree(bfd int, name string) bool {
	fd, err := unix.Openat(bfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return errors.Is(err, unix.ENOENT)
	}
	defer unix.Close(fd)
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return false
	}
	old := "old-" + randomName()
	if unix.Renameat(bfd, name, bfd, old) != nil {
		return false
	}
	removeTree(bfd, old)
	return true
}

// etcCopier copies sources into a view.
type etcCopier struct {
	euid    int
	groups  map[uint32]bool // this process's group and supplementary groups
	uid     int             // the box's host uid and gid (generated files)
	gid     int
	entries int
	bytes   int64
	newest  int64     // the latest change time of a source's file, in ns
	dirs    []dirMeta // directories made, given their mode and times last
}

type dirMeta struct {
	rel string
	st  unix.Stat_t
	gen bool // a parent airlock made (mode 0755, root's or airlock's)
}

// source copies s into the view rooted at rfd and returns the stamps of
// every directory and regular file of s.
func (c *etcCopier) source(rfd int, s etcSource) ([]etcStamp, error) {
	rel := strings.TrimPrefix(s.box, "/etc/")
	if rel == s.box || rel == "" || strings.Contains(rel, "..") {
		return nil, noView("%s is not beneath /etc", s.box)
	}
	if err := c.parents(rfd, filepath.Dir(rel)); err != nil {
		return nil, err
	}
	// The pinned descriptor is O_PATH; the copy reads through a fresh
	// open of the same inode, checked to be it.
	src, st, err := reopenPlain(int(s.pn.f.Fd()), s.box)
	if err != nil {
		return nil, err
	}
	defer unix.Close(src)
	if uint64(st.Dev) != s.pn.dev || st.Ino != s.pn.ino {
		return nil, noView("%s changed while it was copied", s.box)
	}
	var stamps []etcStamp
	if err := c.copyAt(src, &st, rfd, rel, "", &stamps, 0); err != nil {
		return nil, err
	}
	return stamps, nil
}

// reopenPlain opens for reading the file the O_PATH descriptor pfd holds,
// only when it is a regular file or a directory: opening a device may act
// (a tape rewinds, a watchdog starts) and opening a pipe wakes its writer,
// whatever is read after. The type is the descriptor's own, so a name
// swapped meanwhile does not matter.
func reopenPlain(pfd int, what string) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return -1, st, noView("stat %s: %v", what, err)
	}
	flags := unix.O_RDONLY | unix.O_NOCTTY | unix.O_NONBLOCK | unix.O_CLOEXEC
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		flags |= unix.O_DIRECTORY
	case unix.S_IFREG:
	default:
		return -1, st, noView("%s is neither a file nor a directory", what)
	}
	fd, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", pfd), flags, 0)
	if err != nil {
		return -1, st, noView("open %s: %v", what, err)
	}
	var ost unix.Stat_t
	if err := unix.Fstat(fd, &ost); err != nil || ost.Dev != st.Dev || ost.Ino != st.Ino {
		unix.Close(fd)
		return -1, st, noView("%s changed while it was copied", what)
	}
	return fd, ost, nil
}

// parents makes the directories between the view's top and rel (mode 0755,
// as the host's /etc/ssl or /etc/pki are).
func (c *etcCopier) parents(rfd int, rel string) error {
	if rel == "." || rel == "" {
		return nil
	}
	if err := c.parents(rfd, filepath.Dir(rel)); err != nil {
		return err
	}
	err := unix.Mkdirat(rfd, rel, 0o700)
	if errors.Is(err, unix.EEXIST) {
		return nil
	}
	if err != nil {
		return noView("mkdir %s: %v", rel, err)
	}
	c.dirs = append(c.dirs, dirMeta{rel: rel, gen: true})
	return nil
}

// copyAt copies the open file src (stat st) to rel beneath rfd; srel is
// its path beneath its source (for the stamps).
func (c *etcCopier) copyAt(src int, st *unix.Stat_t, rfd int, rel, srel string, stamps *[]etcStamp, depth int) error {
	if c.entries++; c.entries > maxEtcEntries || depth > maxEtcDepth {
		return noView("too large")
	}
	c.newest = max(c.newest, st.Ctim.Nano())
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		*stamps = append(*stamps, stampOf(srel, st))
		return c.file(src, st, rfd, rel)
	case unix.S_IFDIR:
		*stamps = append(*stamps, stampOf(srel, st))
		return c.dir(src, st, rfd, rel, srel, stamps, depth)
	default:
		return noView("%s is neither a file nor a directory", rel)
	}
}

func (c *etcCopier) file(src int, st *unix.Stat_t, rfd int, rel string) error {
	if c.bytes += st.Size; c.bytes > maxEtcBytes {
		return noView("too large")
	}
	dfd, err := unix.Openat(rfd, rel, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return noView("create %s: %v", rel, err)
	}
	dst := os.NewFile(uintptr(dfd), rel)
	defer dst.Close()
	n, err := io.Copy(dst, io.LimitReader(fdReader{src}, st.Size+1))
	if err != nil || n != st.Size {
		return noView("copy %s: changed while copied", rel)
	}
	return c.meta(dfd, st)
}

// fdReader reads a descriptor without taking ownership of it.
type fdReader struct{ fd int }

func (r fdReader) Read(b []byte) (int, error) {
	n, err := unix.Read(r.fd, b)
	if n == 0 && err == nil && len(b) > 0 {
		return 0, io.EOF
	}
	if n < 0 {
		n = 0
	}
	return n, err
}

func (c *etcCopier) dir(src int, st *unix.Stat_t, rfd int, rel, srel string, stamps *[]etcStamp, depth int) error {
	if err := unix.Mkdirat(rfd, rel, 0o700); err != nil {
		return noView("mkdir %s: %v", rel, err)
	}
	c.dirs = append(c.dirs, dirMeta{rel: rel, st: *st})
	names, err := readNames(src)
	if err != nil {
		return noView("read %s: %v", rel, err)
	}
	for _, name := range names {
		var cst unix.Stat_t
		if err := unix.Fstatat(src, name, &cst, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return noView("stat %s/%s: %v", rel, name, err)
		}
		crel, csrel := rel+"/"+name, name
		if srel != "" {
			csrel = srel + "/" + name
		}
		if cst.Mode&unix.S_IFMT == unix.S_IFLNK {
			if err := c.link(src, name, &cst, rfd, crel); err != nil {
				return err
			}
			continue
		}
		if t := cst.Mode & unix.S_IFMT; t != unix.S_IFDIR && t != unix.S_IFREG {
			return noView("%s is neither a file, a directory nor a link", crel)
		}
		pfd, err := unix.Openat(src, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return noView("open %s: %v", crel, err)
		}
		cfd, ost, err := reopenPlain(pfd, crel)
		unix.Close(pfd)
		if err != nil {
			return err
		}
		if ost.Ino != cst.Ino || ost.Dev != cst.Dev {
			unix.Close(cfd)
			return noView("%s changed while it was copied", crel)
		}
		err = c.copyAt(cfd, &ost, rfd, crel, csrel, stamps, depth+1)
		unix.Close(cfd)
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *etcCopier) link(dirfd int, name string, st *unix.Stat_t, rfd int, rel string) error {
	if c.entries++; c.entries > maxEtcEntries {
		return noView("too large")
	}
	target, err := readlinkat(dirfd, name)
	if err != nil {
		return noView("read link %s: %v", rel, err)
	}
	if err := unix.Symlinkat(target, rfd, rel); err != nil {
		return noView("link %s: %v", rel, err)
	}
	if c.euid == 0 {
		if err := unix.Fchownat(rfd, rel, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return noView("chown %s: %v", rel, err)
		}
	}
	ts := []unix.Timespec{st.Atim, st.Mtim}
	unix.UtimesNanoAt(rfd, rel, ts, unix.AT_SYMLINK_NOFOLLOW)
	return nil
}

// generated writes one of airlock's files: read-only for everyone and,
// under root, the box user's, as bubblewrap's --ro-bind-data makes them.
func (c *etcCopier) generated(rfd int, g etcGen) error {
	rel := strings.TrimPrefix(g.box, "/etc/")
	dfd, err := unix.Openat(rfd, rel, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return noView("create %s: %v", rel, err)
	}
	defer unix.Close(dfd)
	if _, err := unix.Write(dfd, []byte(g.content)); err != nil {
		return noView("write %s: %v", rel, err)
	}
	if c.euid == 0 {
		if err := unix.Fchown(dfd, c.uid, c.gid); err != nil {
			return noView("chown %s: %v", rel, err)
		}
	}
	if err := unix.Fchmod(dfd, 0o444); err != nil {
		return noView("chmod %s: %v", rel, err)
	}
	return nil
}

// meta gives the copy fd the owner, mode and times of st.
func (c *etcCopier) meta(fd int, st *unix.Stat_t) error {
	if c.euid == 0 {
		if err := unix.Fchown(fd, int(st.Uid), int(st.Gid)); err != nil {
			return noView("chown: %v", err)
		}
	}
	// After the chown, which clears set-id bits.
	if err := unix.Fchmod(fd, c.mode(st)); err != nil {
		return noView("chmod: %v", err)
	}
	ts := []unix.Timespec{st.Atim, st.Mtim}
	if err := unix.UtimesNanoAt(fd, fmt.Sprintf("/proc/self/fd/%d", fd), ts, 0); err != nil {
		return noView("times: %v", err)
	}
	return nil
}

// mode is the copy's mode for a source of st. Under root the copy keeps
// the source's owner, so its mode is the source's. Otherwise the copy is
// this user's: its owner bits become those that applied to this user (the
// box's) on the source, so it may read, write or run no more than before.
func (c *etcCopier) mode(st *unix.Stat_t) uint32 {
	m := st.Mode & 0o7777
	if c.euid == 0 || int(st.Uid) == c.euid {
		return m
	}
	var class uint32
	switch {
	case c.groups[st.Gid]:
		class = (m >> 3) & 0o7
	default:
		class = m & 0o7
	}
	return m&^0o700 | class<<6
}

// finishDirs gives every directory made its mode, owner and times, deepest
// first, once nothing more is made in it.
func (c *etcCopier) finishDirs(rfd int) error {
	for i := len(c.dirs) - 1; i >= 0; i-- {
		d := c.dirs[i]
		fd, err := unix.Openat(rfd, d.rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return noView("open %s: %v", d.rel, err)
		}
		if d.gen {
			err = unix.Fchmod(fd, 0o755)
		} else {
			err = c.meta(fd, &d.st)
		}
		unix.Close(fd)
		if err != nil {
			return err
		}
	}
	return unix.Fchmod(rfd, 0o755)
}

// stampTree stamps the view rooted at fd: its directories and regular
// files.
func stampTree(fd int) ([]etcStamp, error) {
	var out []etcStamp
	var walk func(dfd int, rel string, depth int) error
	walk = func(dfd int, rel string, depth int) error {
		var st unix.Stat_t
		if err := unix.Fstat(dfd, &st); err != nil {
			return noView("stat view: %v", err)
		}
		out = append(out, stampOf(rel, &st))
		if depth > maxEtcDepth {
			return noView("too deep")
		}
		names, err := readNames(dfd)
		if err != nil {
			return noView("read view: %v", err)
		}
		for _, n := range names {
			var cst unix.Stat_t
			if err := unix.Fstatat(dfd, n, &cst, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return noView("stat view: %v", err)
			}
			crel := n
			if rel != "" {
				crel = rel + "/" + n
			}
			switch cst.Mode & unix.S_IFMT {
			case unix.S_IFREG:
				out = append(out, stampOf(crel, &cst))
			case unix.S_IFDIR:
				cfd, err := unix.Openat(dfd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if err != nil {
					return noView("open view: %v", err)
				}
				err = walk(cfd, crel, depth+1)
				unix.Close(cfd)
				if err != nil {
					return err
				}
			}
		}
		return nil
	}
	return out, walk(fd, "", 0)
}

// readNames lists the directory fd (its offset is moved; a fresh
// descriptor reads from the start).
func readNames(fd int) ([]string, error) {
	dup, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dup), ".")
	defer f.Close()
	names, err := f.Readdirnames(-1)
	sort.Strings(names)
	return names, err
}

// pruneViews removes the oldest views beyond etcViewsKept, and what an
// interrupted run left (temporary and moved-aside views).
func pruneViews(bfd int, keep string) {
	names, err := readNames(bfd)
	if err != nil {
		return
	}
	type view struct {
		key string
		at  int64
	}
	var views []view
	recorded := map[string]bool{}
	for _, n := range names {
		if k, ok := strings.CutSuffix(n, ".rec"); ok {
			recorded[k] = true
		}
	}
	for _, n := range names {
		switch {
		case strings.HasPrefix(n, "tmp-") || strings.HasPrefix(n, "old-"),
			// A view without a record (its run ended before writing it,
			// or the write failed) is never used again: left, such views
			// would pile up beyond any bound.
			n != keep && isViewKey(n) && !recorded[n]:
			var st unix.Stat_t
			// A temporary view may be another run's in the making.
			if unix.Fstatat(bfd, n, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && time.Since(time.Unix(0, st.Mtim.Nano())) > time.Minute {
				removeView(bfd, n)
			}
		case strings.HasSuffix(n, ".rec"):
			var st unix.Stat_t
			if k := strings.TrimSuffix(n, ".rec"); k != keep && unix.Fstatat(bfd, n, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
				views = append(views, view{k, st.Mtim.Nano()})
			}
		}
	}
	sort.Slice(views, func(i, j int) bool { return views[i].at > views[j].at })
	for i := etcViewsKept - 1; i < len(views); i++ {
		// A view a run holds stays until a later prune.
		if moveAsideIfFree(bfd, views[i].key) {
			unix.Unlinkat(bfd, views[i].key+".rec", 0)
		}
	}
}

// isViewKey reports whether name is what etcKey makes: 32 lowercase hex
// digits.
func isViewKey(name string) bool {
	if len(name) != 32 {
		return false
	}
	for _, c := range name {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// removeView removes the moved-aside view name unless a run still holds
// it (its shared lock); then a later prune takes it.
func removeView(bfd int, name string) {
	fd, err := unix.Openat(bfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return
	}
	removeTree(bfd, name)
}

// removeTree removes name beneath dirfd and everything in it, never
// following a link.
func removeTree(dirfd int, name string) {
	if unix.Unlinkat(dirfd, name, 0) == nil {
		return
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	// A copy made read-only still goes: its directory is made writable
	// first.
	unix.Fchmod(fd, 0o700)
	names, _ := readNames(fd)
	for _, n := range names {
		removeTree(fd, n)
	}
	unix.Close(fd)
	unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
}

func randomName() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ownGroups are this process's group and supplementary groups.
func ownGroups() map[uint32]bool {
	out := map[uint32]bool{uint32(os.Getegid()): true}
	if gs, err := unix.Getgroups(); err == nil {
		for _, g := range gs {
			out[uint32(g)] = true
		}
	}
	return out
}
