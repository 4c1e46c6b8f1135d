package fleetcli

import (
	"path/filepath"

	"context"

	"github.com/airlock-run/airlock/api"
	"github.com/airlock-run/airlock/files"
	"github.com/airlock-run/airlock/node"
)

// serverFiles is the server's file store (STATE/files) as the API uses
// it: the API names references as strings and never imports the store.
type serverFiles struct{ st *files.Store }

var _ api.Files = serverFiles{}

func (f serverFiles) StartJob(ctx context.Context, tenant, id, parent string) (string, error) {
	return f.st.StartJob(ctx, tenant, id, parent)
}

func (f serverFiles) TreeOf(ctx context.Context, tenant, id string) (string, error) {
	return f.st.TreeOf(ctx, tenant, id)
}

func (f serverFiles) CheckRef(ref string) error {
	_, err := files.ParseRef(ref)
	return err
}

func (f serverFiles) RefOf(data []byte) string { return files.RefOf(data).String() }

func (f serverFiles) Put(ctx context.Context, tenant, tree, job string, data []byte) (string, error) {
	r, err := f.st.Put(ctx, files.Scope{Tenant: tenant, Tree: tree, Job: job}, data)
	if err != nil {
		return "", err
	}
	return r.String(), nil
}

func (f serverFiles) Get(ctx context.Context, tenant, tree, ref string) ([]byte, error) {
	r, err := files.ParseRef(ref)
	if err != nil {
		return nil, err
	}
	return f.st.Get(ctx, files.Scope{Tenant: tenant, Tree: tree}, r)
}

func (f serverFiles) List(ctx context.Context, tenant, tree string) ([]api.FileInfo, error) {
	list, err := f.st.List(ctx, files.Scope{Tenant: tenant, Tree: tree})
	if err != nil {
		return nil, err
	}
	out := make([]api.FileInfo, 0, len(list))
	for _, in := range list {
		out = append(out, api.FileInfo{Ref: in.Ref.String(), Size: in.Size, Via: in.Via, Stored: in.Stored})
	}
	return out, nil
}

// openServerFiles opens the server's file store (STATE/files) and the
// provenance of its files (STATE/files-provenance.jsonl).
func openServerFiles(dir string) (*files.Store, *api.Provenance, error) {
	st, err := files.Open(filepath.Join(dir, "files"), files.Options{})
	if err != nil {
		return nil, nil, err
	}
	prov, err := api.OpenProvenance(filepath.Join(dir, "files-provenance.jsonl"))
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return st, prov, nil
}

// nodeTenant is the one tenant of a node's own store: the server divides
// its store by tenant, the node holds only the files of the jobs it runs.
const nodeTenant = "node"

// jobScope is job id's scope in the node's store: a tree of its own, so a
// job's kernel reads what it kept and what the server handed it (through
// node.Tree), never another job's on the same node.
func jobScope(id string) files.Scope { return files.Scope{Tenant: nodeTenant, Tree: id} }

// nodeFiles is the node's store (STATE/files) as node.Tree moves files
// in and out of it.
type nodeFiles struct{ st *files.Store }

var _ node.LocalFiles = nodeFiles{}

func (f nodeFiles) Put(ctx context.Context, job string, data []byte) (string, error) {
	r, err := f.st.Put(ctx, jobScope(job), data)
	if err != nil {
		return "", err
	}
	return r.String(), nil
}

func (f nodeFiles) Get(ctx context.Context, job, ref string) ([]byte, error) {
	r, err := files.ParseRef(ref)
	if err != nil {
		return nil, err
	}
	return f.st.Get(ctx, jobScope(job), r)
}
