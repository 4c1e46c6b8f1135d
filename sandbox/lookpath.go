package sandbox

import "github.com/airlock-run/airlock/sandbox/lookpath"

// NotFoundError is a command that LookPath could not find.
type NotFoundError = lookpath.NotFoundError

// LookPath finds name the way a shell would, on pathEnv (the command's own
// PATH, never airlock's), resolving relative entries against dir: the one
// lookup of the runner (tier 0, on the host) and the in-box init.
func LookPath(name, pathEnv, dir string) (string, error) {
	return lookpath.LookPath(name, pathEnv, dir)
}

// EnvValue returns the value of key in a KEY=VALUE list, the last one
// winning as in a process's environment.
func EnvValue(env []string, key string) string { return lookpath.EnvValue(env, key) }

func candidates(name, pathEnv, dir string) ([]string, string) {
	return lookpath.Candidates(name, pathEnv, dir)
}

func executable(p string) error { return lookpath.Executable(p) }
