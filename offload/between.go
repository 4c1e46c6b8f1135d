package offload

import (
	"context"
	"os"
	"path"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/files"
)

// MetaKey is the key of a call's _meta under which the paths of the files
// handed to it are given, as {ref: path}.
const MetaKey = "airlock/files"

// Bind is a file to bind read-only into a tool's box.
type Bind struct {
	Src string // path on the host
	Dst string // path inside the box
}

// Handed is what a call gets for the file references among its arguments.
type Handed struct {
	// Meta maps each reference to the path the tool reads it at; the
	// caller puts it in the call's _meta under MetaKey.
	Meta map[string]string
	// Binds are the read-only binds for the tool's box; empty when the tool
	// runs without one.
	Binds []Bind
}

// HandFiles finds the file references among the top-level arguments of a
// call and writes each, when sc may read it, into hostDir (a directory the
// caller creates for this call and removes after it) as a read-only file.
// With boxDir set the paths in Meta are where the files appear inside the
// tool's box (boxDir/<digest>) and Binds says how to put them there;
// without, they are the host paths. A reference sc may not read fails the
// whole call with the store's "not found", so a tool never runs with only
// part of what it was given; a malformed reference is Invalid.
func HandFiles(ctx context.Context, st *files.Store, sc files.Scope, args map[string]any, hostDir, boxDir string) (Handed, error) {
	refs, err := files.RefsIn(args)
	if err != nil || len(refs) == 0 {
		return Handed{}, err
	}
	if st == nil {
		return Handed{}, errs.Unavailablef("offload: the call names files and no file store is configured")
	}
	if boxDir != "" && !path.IsAbs(boxDir) {
		return Handed{}, errs.Invalidf("offload: the box directory %q is not absolute", boxDir)
	}
	if err := os.MkdirAll(hostDir, 0o700); err != nil {
		return Handed{}, errs.Wrap(errs.Unavailable, err, "offload: create %s", hostDir)
	}
	h := Handed{Meta: map[string]string{}}
	for _, r := range refs {
		p, err := st.Materialize(ctx, sc, r, hostDir)
		if err != nil {
			return Handed{}, err
		}
		if boxDir == "" {
			h.Meta[r.String()] = p
			continue
		}
		dst := path.Join(boxDir, r.Hex())
		h.Meta[r.String()] = dst
		h.Binds = append(h.Binds, Bind{Src: p, Dst: dst})
	}
	return h, nil
}

// KeepResource keeps a file a tool returned as an embedded resource whose
// URI is a file reference, after checking that the bytes are the ones the
// URI names: a tool cannot name another file by claiming its digest.
func KeepResource(ctx context.Context, st *files.Store, sc files.Scope, uri string, data []byte) (files.Ref, error) {
	want, err := files.ParseRef(uri)
	if err != nil {
		return files.Ref{}, err
	}
	if got := files.RefOf(data); got != want {
		return files.Ref{}, errs.Invalidf("offload: the resource names %s but its bytes are %s", want, got)
	}
	if st == nil {
		return files.Ref{}, errs.Unavailablef("offload: no file store is configured to keep %s", want)
	}
	return st.Put(ctx, sc, data)
}
