package cli

func auditCmd() *Command { return notYet("audit", "verify the audit log") }
