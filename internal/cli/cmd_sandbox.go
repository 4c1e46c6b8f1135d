package cli

func sandboxCmd() *Command { return notYet("sandbox", "what confinement this host gives") }
