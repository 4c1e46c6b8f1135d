package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

func completionCmd() *Command {
	return &Command{
		Name: "completion", Usage: "bash|zsh", Short: "print a shell completion script",
		Long: "Print a completion script: source <(airlock completion bash)",
		Run: func(ctx context.Context, env *Env, args []string) error {
			if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
				fmt.Fprintf(env.Stdout, "Usage: airlock completion bash|zsh\n\nPrint a completion script: source <(airlock completion bash)\n")
				return nil
			}
			if len(args) != 1 || (args[0] != "bash" && args[0] != "zsh") {
				return usagef("name the shell: bash or zsh")
			}
			var top []string
			subs := map[string][]string{}
			for _, c := range commands() {
				if c.Hidden {
					continue
				}
				top = append(top, c.Name)
				for _, s := range c.Sub {
					subs[c.Name] = append(subs[c.Name], s.Name)
				}
			}
			sort.Strings(top)
			var b strings.Builder
			if args[0] == "zsh" {
				b.WriteString("autoload -U +X bashcompinit && bashcompinit\n")
			}
			b.WriteString("_airlock() {\n  local cur=${COMP_WORDS[COMP_CWORD]}\n  if [ $COMP_CWORD -eq 1 ]; then\n")
			fmt.Fprintf(&b, "    COMPREPLY=($(compgen -W %q -- \"$cur\"))\n    return\n  fi\n  case ${COMP_WORDS[1]} in\n", strings.Join(top, " "))
			for _, name := range top {
				if len(subs[name]) > 0 {
					fmt.Fprintf(&b, "    %s) [ $COMP_CWORD -eq 2 ] && COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", name, strings.Join(subs[name], " "))
				}
			}
			b.WriteString("    *) COMPREPLY=($(compgen -f -- \"$cur\")) ;;\n  esac\n}\ncomplete -F _airlock airlock\n")
			_, err := fmt.Fprint(env.Stdout, b.String())
			return err
		},
	}
}
