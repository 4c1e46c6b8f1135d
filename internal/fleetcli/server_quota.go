package fleetcli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/airlock-run/airlock/internal/cli"

	"github.com/airlock-run/airlock/api"
	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/privfile"
	"github.com/airlock-run/airlock/jobs"
)

// quotaFlag is a repeatable NAME=N flag (--pool-quota, --tenant-quota).
type quotaFlag struct {
	what string
	m    map[string]int
}

func (q *quotaFlag) String() string {
	if q == nil || len(q.m) == 0 {
		return ""
	}
	var out []string
	for k, v := range q.m {
		out = append(out, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// Set reads one NAME=N: a pool's or tenant's name (or * for every one not
// named) and at least 1.
func (q *quotaFlag) Set(s string) error {
	name, num, ok := strings.Cut(s, "=")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n < 1 {
		return fmt.Errorf("%q: want %s=N, N at least 1", s, strings.ToUpper(q.what))
	}
	if name != jobs.AnyName {
		if err := jobs.CheckName(q.what, name); err != nil {
			return errors.New(errs.AgentMessage(err))
		}
	}
	if _, dup := q.m[name]; dup {
		return fmt.Errorf("%q: %s %s given twice", s, q.what, name)
	}
	if q.m == nil {
		q.m = map[string]int{}
	}
	q.m[name] = n
	return nil
}

var _ flag.Value = (*quotaFlag)(nil)

// maxTenantsFile bounds the tenants file.
const maxTenantsFile = 1 << 20

// tenantTokens reads the tenants file: one "TENANT TOKEN" a line (blank
// lines and # comments allowed). A missing file is no tenant beyond the
// default one (STATE/token's). The file holds tokens, so one that others
// may read is refused, as is a tenant or token given twice, the name of
// the default tenant (STATE/token is its token), or a short token.
func tenantTokens(path string) ([]api.Tenant, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "tenants file")
	}
	switch {
	case !fi.Mode().IsRegular():
		return nil, errs.Invalidf("tenants file %s: not a regular file", path)
	case fi.Mode().Perm()&0o077 != 0:
		return nil, errs.Invalidf("tenants file %s: mode %o lets others read its tokens: chmod 600 %s", path, fi.Mode().Perm(), path)
	case fi.Size() > maxTenantsFile:
		return nil, errs.Invalidf("tenants file %s: over %d bytes", path, maxTenantsFile)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "tenants file")
	}
	var out []api.Tenant
	seen := map[string]bool{}
	for i, line := range strings.Split(string(b), "\n") {
		f := uncommented(strings.Fields(line))
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return nil, errs.Invalidf("tenants file %s: line %d: want TENANT TOKEN", path, i+1)
		}
		t := api.Tenant{Name: f[0], Token: f[1]}
		if err := jobs.CheckName("tenant", t.Name); err != nil {
			return nil, errs.Invalidf("tenants file %s: line %d: %s", path, i+1, errs.AgentMessage(err))
		}
		switch {
		case t.Name == jobs.DefaultTenant:
			return nil, errs.Invalidf("tenants file %s: line %d: tenant %s is the server's token file's; name another", path, i+1, t.Name)
		case len(t.Token) < 16:
			return nil, errs.Invalidf("tenants file %s: line %d: the token is shorter than 16 characters", path, i+1)
		case seen[t.Name] || seen["token:"+t.Token]:
			return nil, errs.Invalidf("tenants file %s: line %d: a tenant or token given twice", path, i+1)
		}
		seen[t.Name], seen["token:"+t.Token] = true, true
		out = append(out, t)
	}
	return out, nil
}

// uncommented is a line's fields before its comment: one that begins a
// field with #. A # inside a token is the token's, never a cut that would
// leave a shorter token than the file shows.
func uncommented(f []string) []string {
	for i, s := range f {
		if strings.HasPrefix(s, "#") {
			return f[:i]
		}
	}
	return f
}

// serverTenants reads the tenants file and refuses a tenant's token that
// is another role's (the operator's, an admin's, the enrolment token):
// one token, one principal.
func serverTenants(o serverOptions, token, enroll string, admins []api.Admin) ([]api.Tenant, error) {
	tenants, err := tenantTokens(o.tenantsFile)
	if err != nil {
		return nil, err
	}
	others := map[string]string{token: "the operator's token", enroll: "the enrolment token"}
	for _, a := range admins {
		others[a.Token] = "admin " + a.Name + "'s token"
	}
	// A tenant's name is its principal's, written as who acted (an
	// answer's "person:NAME", a job.start's "by"): one that is an admin's
	// or the operator token's would pass its acts off as theirs.
	names := map[string]string{api.OperatorName: "the operator token's name"}
	for _, a := range admins {
		names[a.Name] = "admin " + a.Name + "'s name"
	}
	for _, t := range tenants {
		if what, ok := others[t.Token]; ok {
			return nil, errs.Invalidf("tenants file %s: tenant %s has %s; give each its own", o.tenantsFile, t.Name, what)
		}
		if what, ok := names[t.Name]; ok {
			return nil, errs.Invalidf("tenants file %s: tenant %s is named as %s, which the audit log could not tell apart; name it another", o.tenantsFile, t.Name, what)
		}
	}
	return tenants, nil
}

// serverQuotas is the fleet's quotas, their slots kept in STATE/quota.json.
// A tenant quota must name a tenant the server knows (or *), so a typo
// never leaves a tenant unbounded.
func serverQuotas(o serverOptions, tenants []api.Tenant, log *slog.Logger) (*jobs.Quotas, error) {
	known := map[string]bool{jobs.DefaultTenant: true, jobs.AnyName: true}
	for _, t := range tenants {
		known[t.Name] = true
	}
	for name := range o.tenantQuota {
		if !known[name] {
			return nil, cli.Usagef("--tenant-quota %s: no such tenant (the default one, or a line of %s)", name, o.tenantsFile)
		}
	}
	held, save, err := quotaFile(filepath.Join(o.dir, "quota.json"))
	if err != nil {
		return nil, err
	}
	return jobs.NewQuotas(jobs.QuotaConfig{Pools: o.poolQuota, Tenants: o.tenantQuota, Held: held, Save: save, Log: log})
}

// maxQuotaFile bounds the slots file read at start.
const maxQuotaFile = 16 << 20

// quotaFile reads the quota slots saved in path (none when it does not
// exist) and returns how to save them, through privfile (0600).
func quotaFile(path string) ([]jobs.Slot, func([]jobs.Slot) error, error) {
	var held []jobs.Slot
	b, err := privfile.ReadFile(path, maxQuotaFile, privfile.Options{})
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &held); err != nil {
			return nil, nil, errs.Invalidf("quota slots %s: %v (remove it: every slot is then free, and running jobs may exceed the quotas until they end)", path, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, nil, errs.Wrap(errs.Unavailable, err, "quota slots %s", path)
	}
	save := func(all []jobs.Slot) error {
		b, err := json.MarshalIndent(all, "", "  ")
		if err != nil {
			return err
		}
		return privfile.WriteFile(path, append(b, '\n'), 0o600, privfile.Options{})
	}
	return held, save, nil
}
