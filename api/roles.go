package api

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"

	"github.com/airlock-run/airlock/jobs"
)

// Role is what a bearer token may do.
type Role int

// Roles, each from RoleOperator on allowed what the one before it may do.
const (
	// RoleNone is a request without a known token.
	RoleNone Role = iota
	// RoleNode is an enrolled node's own token: it registers that node
	// and raises questions of the runs that node holds, and nothing else
	// (NodeOrOperator). It sits below the operator, so every route that
	// needs the operator refuses it.
	RoleNode
	// RoleOperator starts and reads jobs and answers approvals.
	RoleOperator
	// RoleAdmin also opts nodes out of the sandbox, enrols and manages
	// nodes.
	RoleAdmin
)

func (r Role) String() string {
	switch r {
	case RoleNode:
		return "node"
	case RoleOperator:
		return "operator"
	case RoleAdmin:
		return "admin"
	}
	return "none"
}

// Admin is one admin's name and token: four eyes need two admins, each
// with a token of their own.
type Admin struct {
	Name  string
	Token string
}

// Principal is who made a request: the role its token carries and, for an
// admin, their name; for a node, its id; for a tenant's operator token,
// the tenant's name.
type Principal struct {
	Role Role
	Name string
	// Tenant is whose jobs the token starts: the operator token's and the
	// admins' are jobs.DefaultTenant, a tenants file's each its own; ""
	// for a node.
	Tenant string
}

// OperatorName is the principal name of the server's own operator token
// (STATE/token): no tenant or admin may be named so.
const OperatorName = "operator"

type principalKey struct{}

// PrincipalOf is the request's principal (RoleNone outside the API's
// handler).
func PrincipalOf(ctx context.Context) Principal {
	p, _ := ctx.Value(principalKey{}).(Principal)
	return p
}

// principal finds the token's role. Every known token is compared, each
// in constant time, so the time taken says nothing of which one came
// close; an empty token is never a match.
func (s *Server) principal(got string) Principal {
	var p Principal
	match := func(want string) bool {
		return want != "" && len(got) > 0 && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
	}
	if match(s.cfg.Token) {
		p = Principal{Role: RoleOperator, Name: OperatorName, Tenant: jobs.DefaultTenant}
	}
	if t, ok := s.tenantToken(got); ok && p.Role == RoleNone {
		p = Principal{Role: RoleOperator, Name: t, Tenant: t}
	}
	for _, a := range s.cfg.Admins {
		if match(a.Token) && p.Role != RoleAdmin {
			p = Principal{Role: RoleAdmin, Name: a.Name, Tenant: jobs.DefaultTenant}
		}
	}
	// A node's token names its node: its hash is kept in the node's
	// binding, and only the current one matches (see pki.NodeOfToken).
	if p.Role == RoleNone && s.cfg.CA != nil {
		if node, ok := s.cfg.CA.NodeOfToken(got); ok {
			p = Principal{Role: RoleNode, Name: node}
		}
	}
	return p
}

// authorized refuses a request without a known bearer token before any
// route reads it, and notes who made it.
func (s *Server) authorized(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		p := s.principal(got)
		if !ok || p.Role == RoleNone {
			w.Header().Set("WWW-Authenticate", `Bearer realm="airlock"`)
			writeError(w, http.StatusUnauthorized, "a bearer token is required (the server's token file, a tenant's token from its tenants file, its admin-token file, or a node's STATE/pki/node.token)")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, bodyLimit(r))
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

// need serves h only to a principal with role at least want; anyone else
// gets 403 naming the role needed.
func need(want Role, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if got := PrincipalOf(r.Context()); got.Role < want {
			writeError(w, http.StatusForbidden, fmt.Sprintf("%s %s needs the %s role (the server's %s file); this token is %s's",
				r.Method, r.URL.Path, want, tokenFileOf(want), got.Role))
			return
		}
		h(w, r)
	}
}

// AdminOnly serves h to admins only: for routes other parts add (enrolment,
// node management).
func AdminOnly(h http.HandlerFunc) http.HandlerFunc { return need(RoleAdmin, h) }

// OperatorOnly serves h to operators and admins.
func OperatorOnly(h http.HandlerFunc) http.HandlerFunc { return need(RoleOperator, h) }

// NodeOrOperator serves h to a node's token as well as to operators and
// admins: only for what a node does itself (registering, raising its runs'
// questions), where h checks that a node acts in its own name.
func NodeOrOperator(h http.HandlerFunc) http.HandlerFunc { return need(RoleNode, h) }

// actsAs refuses a node's request made in another node's name (403); any
// other principal may name any node.
func actsAs(w http.ResponseWriter, r *http.Request, node string) bool {
	p := PrincipalOf(r.Context())
	if p.Role == RoleNode && p.Name != node {
		writeError(w, http.StatusForbidden, fmt.Sprintf("%s %s: the token is node %s's; a node acts only in its own name, not node %q's", r.Method, r.URL.Path, p.Name, node))
		return false
	}
	return true
}

func tokenFileOf(r Role) string {
	switch r {
	case RoleAdmin:
		return "admin-token"
	case RoleNode:
		return "node's pki/node.token"
	}
	return "token"
}
