package shellread

import "strings"

// riskyExact are environment variables that change which program runs or
// make a program load or run code named in them.
var riskyExact = map[string]bool{
	"PATH": true, "BASH_ENV": true, "ENV": true, "SHELLOPTS": true, "BASHOPTS": true, "PS4": true, "PS0": true, "PS1": true, "PS2": true, "PS3": true,
	"PROMPT_COMMAND": true, "TMPDIR": true, "CDPATH": true, "GLOBIGNORE": true, "HOME": true, "XDG_CONFIG_HOME": true,
	"PYTHONPATH": true, "PYTHONSTARTUP": true, "PYTHONHOME": true, "PYTHONUSERBASE": true,
	"PERL5LIB": true, "PERL5OPT": true, "PERLLIB": true, "RUBYOPT": true, "RUBYLIB": true,
	"NODE_OPTIONS": true, "NODE_PATH": true, "JAVA_TOOL_OPTIONS": true, "_JAVA_OPTIONS": true,
	"JDK_JAVA_OPTIONS": true, "LESSOPEN": true, "LESSCLOSE": true, "PAGER": true, "MANPAGER": true,
	"EDITOR": true, "VISUAL": true, "SSH_ASKPASS": true, "SUDO_ASKPASS": true, "GCONV_PATH": true,
	"RUSTC_WRAPPER": true, "RUSTC": true, "GOFLAGS": true, "CC": true, "CXX": true, "MAKEFLAGS": true,
	"RIPGREP_CONFIG_PATH": true, "TAR_OPTIONS": true, "GREP_OPTIONS": true, "BROWSER": true,
	"NPM_CONFIG_SCRIPT_SHELL": true, "SHELL": true, "TERMINFO": true, "WGETRC": true, "CURL_HOME": true,
	"GNUPGHOME": true, "HOSTALIASES": true, "LOCPATH": true, "NLSPATH": true, "BASH_CMDS": true,
	"BASH_ALIASES": true, "BASH_LOADABLES_PATH": true, "EXECIGNORE": true,
}

// riskyPrefix are prefixes of such variables.
var riskyPrefix = []string{"LD_", "DYLD_", "BASH_FUNC_", "npm_config_", "NPM_CONFIG_", "GIT_", "CARGO_", "PIP_"}

// safeGit are GIT_ variables that only change metadata or prompting.
var safeGit = map[string]bool{
	"GIT_TERMINAL_PROMPT": true, "GIT_AUTHOR_NAME": true, "GIT_AUTHOR_EMAIL": true, "GIT_AUTHOR_DATE": true,
	"GIT_COMMITTER_NAME": true, "GIT_COMMITTER_EMAIL": true, "GIT_COMMITTER_DATE": true,
	"GIT_OPTIONAL_LOCKS": true, "GIT_MERGE_AUTOEDIT": true, "GIT_FLUSH": true, "GIT_PROGRESS_DELAY": true,
	"GIT_LITERAL_PATHSPECS": true, "GIT_NO_REPLACE_OBJECTS": true,
}

// RiskyEnv reports whether assigning the environment variable name can
// change which program runs or make it run other code (PATH, LD_PRELOAD,
// GIT_SSH_COMMAND, BASH_ENV, NODE_OPTIONS, …).
func RiskyEnv(name string) bool {
	if riskyExact[name] || safeGit[name] {
		return riskyExact[name]
	}
	if strings.HasPrefix(name, "CARGO_") {
		return strings.Contains(name, "RUSTC") || strings.Contains(name, "LINKER") || strings.Contains(name, "RUNNER")
	}
	for _, p := range riskyPrefix {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// riskOf says which assignment changes what a command does, if any.
func riskOf(as []Assign) string {
	for _, a := range as {
		if a.Name != "" && RiskyEnv(a.Name) {
			return "assigns " + a.Name + ", which changes what programs run or load"
		}
	}
	return ""
}

// isHomeWord reports whether a raw word starts with the home directory:
// ~, ~/…, $HOME, ${HOME}, "$HOME"….
func isHomeWord(w string) bool {
	_, ok := homeSplit(w)
	return ok
}

// homeRest is what follows the home directory in a raw word ("" or "/…").
func homeRest(w string) string {
	r, _ := homeSplit(w)
	return r
}

func homeSplit(w string) (string, bool) {
	for _, p := range []string{"~", "$HOME", "${HOME}", `"$HOME"`, `"${HOME}"`} {
		if !strings.HasPrefix(w, p) {
			continue
		}
		rest := w[len(p):]
		if p == "$HOME" && rest != "" && (isNameByte(rest[0])) {
			continue // $HOMEDIR
		}
		rest = strings.Trim(rest, `"`)
		if rest != "" && rest[0] != '/' {
			continue // ~user or ~+
		}
		if strings.ContainsAny(rest, "$`*?[{~\\'\"") {
			return "", false
		}
		return rest, true
	}
	return "", false
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
