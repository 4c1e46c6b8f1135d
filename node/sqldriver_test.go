package node

// The tests open file stores, which need the SQLite driver that only the
// programs opening a store link.
import _ "github.com/airlock-run/airlock/files/sqldriver"
