// Package importrules holds the test that enforces the lines DESIGN.md draws
// between airlock's parts (who may start processes, which packages do no
// I/O, who may import policy, Temporal or the CLI). It has no code of its
// own; nothing imports it.
package importrules
