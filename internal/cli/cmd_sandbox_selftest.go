package cli

func sandboxSelftestCmd() *Command { return notYet("selftest", "run the escape matrix") }
