// Package fleetcli runs the fleet's commands that link Temporal: `airlock
// node` (Node: probe, enrol, register, take jobs through a kernel built for
// each) and `airlock server` (Server: the embedded Temporal server and the
// HTTP API). The airlock binary never links it, so no `airlock run`, guard
// or box init pays for the Temporal SDK: only cmd/airlock-node and
// cmd/airlock-server import it, and set cli.Env's Node and Server to it.
package fleetcli

// The node's and the server's file stores need the SQLite driver, which the
// airlock binary leaves out.
import _ "github.com/airlock-run/airlock/files/sqldriver"
