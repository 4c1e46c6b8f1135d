package cli

func readResultCmd() *Command { return notYet("read-result", "read part of an offloaded result") }
