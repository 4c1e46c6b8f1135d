package cli

func runCmd() *Command { return notYet("run", "run a command through the policy and the sandbox") }
