// Command agentloop is the agentloop CLI with its durable mode: the same
// command as github.com/agentloop/agentloop/cmd/agentloop, flags, output
// and exit statuses, plus "agentloop server", a Temporal server for
// development, "agentloop worker", which serves runs on Temporal,
// "agentloop --temporal HOST:PORT PROMPT", which runs a prompt on the
// workers and streams it, and "agentloop approve" and "deny", which answer
// a call that waits. It lives in the durable module, so that only this
// build pulls in the Temporal SDK and server; see agentloop --help.
package main

import (
	"os"

	"github.com/agentloop/agentloop/internal/cli"
)

func main() { os.Exit(cli.MainWith(mode{})) }
