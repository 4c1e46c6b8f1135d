package cli

func policyCmd() *Command { return notYet("policy", "check and explain policies") }
