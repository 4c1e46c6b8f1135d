package cli

func tokensCmd() *Command { return notYet("tokens", "estimate the tokens of a text") }
