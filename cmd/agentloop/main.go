// Agentloop runs the agent loop from the command line: the model
// thinks, calls tools, observes their results and answers.
//
//	agentloop demo                                  # offline, no key: watch the loop work
//	agentloop --tools calculator "What is 3 + 5?"  # one prompt, answer on stdout
//	echo "What is 3 + 5?" | agentloop --json        # events as JSON Lines
//	agentloop                                       # an interactive session on a terminal
//
// The answer streams to stdout; tool activity, retries and notices go to
// stderr, so the answer can be piped. Run agentloop --help for the flags, the
// environment it reads and its exit statuses.
package main

import (
	"os"

	"github.com/agentloop/agentloop/internal/cli"
)

func main() { os.Exit(cli.Main()) }
