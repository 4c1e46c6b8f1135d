// Package landlock applies airlock's Landlock rulesets: the kernel's own
// allowlist of what a process and its descendants may execute (and, on
// newer kernels, write, connect to and signal), held however the command
// that asks was spelled.
//
// It talks to the kernel through raw system calls (golang.org/x/sys/unix)
// rather than a wrapper library: the calls are three, the in-box init stays
// small, and every failure is exact — a ruleset that cannot be applied as
// planned is an error, never a silently weaker one.
//
// It is imported by the in-box init (sandbox/boxinit), which applies the
// rules, and by the host planner and probe (package sandbox), which read the
// kernel's ABI version. Nothing else needs it.
package landlock
