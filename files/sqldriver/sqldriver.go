// Package sqldriver links the file store's SQLite driver (modernc.org/sqlite,
// pure Go, registered as "sqlite") into a program: files.Open needs it. It
// is a package of its own so that the airlock binary, which every `airlock
// run` and every box's guard start and which opens no store, does not pay
// for SQLite's start (the inits of its C runtime: about a millisecond and a
// hundred page faults). Every program that opens a store imports it: the
// airlock-mcp binary (internal/mcpcli, which runs `airlock files` and
// `airlock read-result` as well as the MCP front ends), airlock-node and
// airlock-server (internal/fleetcli), and the tests that open one.
package sqldriver

import _ "modernc.org/sqlite" // registers "sqlite" with database/sql
