// Package e2e runs the airlock binary end to end, as a user would: built
// from this checkout (or taken from $AIRLOCK_BIN), with its own state
// directories, against real bubblewrap, real cgroups and real servers on
// loopback. It has no code of its own; nothing imports it.
package e2e
