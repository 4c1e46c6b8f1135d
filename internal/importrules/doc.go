// Package importrules holds the tests that enforce DESIGN.md's layers: a
// table (table_test.go) placing every airlock package in its layer with the
// airlock packages it may import, the rules the table must obey (only the
// mediator drives runner, front ends only translate, the in-box init never
// imports the host planner, pure packages do no I/O, egress never imports
// policy), and a look at the source of every package for who starts
// processes. A package missing from the table fails. It has no code of its
// own; nothing imports it.
package importrules
