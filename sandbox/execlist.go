package sandbox

// ExecSpec is a box's exec allowlist: with it, a tier-1 box lets the kernel
// execute only the files of the programs it lists (Landlock's execute
// right), however the command that runs them was spelled — through a
// shell, a program's own -exec option, or a copy under another name.
type ExecSpec struct {
	// Programs are the policy's shell.allow: bare names, looked up on the
	// box's PATH (the file the name runs there), or
	// paths, absolute or relative to the working directory. Empty allows
	// only what airlock itself needs (/bin/sh and its loader).
	Programs []string
	// RunWritten lets whatever lies beneath the box's writable places (the
	// write grants in fix mode, /tmp, /var/tmp, /dev/shm and HOME)
	// be executed too. False: a file the box writes can never run.
	RunWritten bool
}
