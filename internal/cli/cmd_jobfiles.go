package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"

	apiwire "github.com/airlock-run/airlock/api/wire"
	"github.com/airlock-run/airlock/approvals"
	"github.com/airlock-run/airlock/errs"
	jobwire "github.com/airlock-run/airlock/jobs/wire"
)

func jobFilesCmd() *Command {
	const usage = "[--get REF | --put FILE|-] [--json] ID"
	const long = `Lists, reads or keeps the files of job ID's tree in the server's store (the
job, the job that started it and every job they started): the results its
calls offloaded and the files they handed on.

  airlock job files ID               list them: ref, size, the jobs that kept it, taint
  airlock job files --get REF ID     write REF's bytes to standard output
  airlock job files --put FILE ID    keep FILE (- for standard input) for job ID; prints the ref

A ref of another tree is "not found", as a ref never kept. Reading a file a
tainted job kept taints job ID from then on, and every job it starts later
(the server records it, and says so here).`
	return &Command{Name: "files", Usage: usage, Short: "the files of a job's tree in the server's store", Long: long,
		Run: func(ctx context.Context, env *Env, args []string) error {
			fs := NewFlags(env, "airlock job files", usage, long)
			cf := addClientFlags(fs)
			get := fs.String("get", "", "write the file `REF` to standard output")
			put := fs.String("put", "", "keep `FILE` (- for standard input) for the job")
			asJSON := fs.Bool("json", false, "print JSON")
			pos, err := parseInterspersed(fs, args)
			if err != nil {
				return err
			}
			switch {
			case len(pos) != 1:
				return usagef("one job ID (see airlock job files --help)")
			case *get != "" && *put != "":
				return usagef("--get or --put, not both")
			}
			if err := jobwire.CheckName("job id", pos[0]); err != nil {
				return usagef("%v", err)
			}
			c, err := newAPIClient(env, cf)
			if err != nil {
				return err
			}
			job := url.QueryEscape(pos[0])
			switch {
			case *get != "":
				return c.getFile(ctx, env, *get, job)
			case *put != "":
				return c.putFile(ctx, env, *put, job, *asJSON)
			}
			return c.listFiles(ctx, env, job, *asJSON)
		}}
}

// getFile writes the file's bytes to standard output and says on standard
// error when reading it tainted the job.
func (c *apiClient) getFile(ctx context.Context, env *Env, ref, job string) error {
	resp, err := c.send(ctx, http.MethodGet, "/v1/files/"+url.PathEscape(ref)+"?job="+job, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if taint := resp.Header.Values(apiwire.TaintHeader); len(taint) > 0 {
		fmt.Fprintf(env.Stderr, "airlock job files: job %s is tainted from now on: it %s\n", approvals.Show(job), approvals.Show(strings.Join(taint, "; ")))
	}
	if _, err := io.Copy(env.Stdout, io.LimitReader(resp.Body, apiwire.MaxFile+1)); err != nil {
		return errs.Wrap(errs.Unavailable, err, "write %s", ref)
	}
	return nil
}

// putFile keeps a file (or standard input) for the job and prints its ref.
func (c *apiClient) putFile(ctx context.Context, env *Env, file, job string, asJSON bool) error {
	var in io.Reader = env.Stdin
	if file != "-" {
		f, err := os.Open(absFrom(env, file))
		if err != nil {
			return usagef("--put %s: %v", file, err)
		}
		defer f.Close()
		in = f
	}
	if in == nil {
		return usagef("--put -: no standard input")
	}
	data, err := io.ReadAll(io.LimitReader(in, apiwire.MaxFile+1))
	if err != nil {
		return errs.Wrap(errs.Invalid, err, "read %s", file)
	}
	if len(data) > apiwire.MaxFile {
		return usagef("--put %s: more than %d MiB, the most a file may be", file, apiwire.MaxFile>>20)
	}
	resp, err := c.send(ctx, http.MethodPost, "/v1/files?job="+job, data)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var k apiwire.Kept
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&k); err != nil {
		return errs.Wrap(errs.Unavailable, err, "the server's answer")
	}
	if asJSON {
		return json.NewEncoder(env.Stdout).Encode(k)
	}
	_, err = fmt.Fprintln(env.Stdout, k.Ref)
	return err
}

func (c *apiClient) listFiles(ctx context.Context, env *Env, job string, asJSON bool) error {
	var list []apiwire.FileInfo
	if err := c.do(ctx, http.MethodGet, "/v1/files?job="+job, nil, &list); err != nil {
		return err
	}
	if asJSON {
		return json.NewEncoder(env.Stdout).Encode(list)
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REF\tSIZE\tKEPT BY\tTAINT")
	for _, f := range list {
		taint := "-"
		if f.Tainted {
			taint = approvals.Show(f.Taint)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", f.Ref, f.Size, strings.Join(f.Jobs, ","), taint)
	}
	return tw.Flush()
}

// send sends body as raw bytes; an error status is an error of its class
// with the server's message.
func (c *apiClient) send(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(string(body))
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, usagef("--server %q: %v", c.base, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "the server at %s", c.base)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		var e struct{ Error string }
		json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&e)
		return nil, errs.New(classOfStatus(resp.StatusCode), "%s", firstNonEmpty(e.Error, resp.Status))
	}
	return resp, nil
}
