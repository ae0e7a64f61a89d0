package cli

import (
	"flag"

	"github.com/agentloop/agentloop/llm"
)

// The --compaction flag: how the history is kept under the context limit,
// as memory.Config.Compaction has it. Empty chooses by model.
func defineCompactionFlag(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.compaction, "compaction", "", "")
}

// checkCompaction checks --compaction. "server" on a model the table says
// cannot compact on the server would be a 400 after the first request, so
// it is refused before; an unknown model is the user's call.
func checkCompaction(o *options) error {
	switch o.compaction {
	case "", "client", "off":
		return nil
	case "server":
		if info, known := llm.LookupModel(o.model); known && !info.ServerCompaction {
			return usageError("--compaction server: %s cannot compact on the server; use --compaction client", o.model)
		}
		return nil
	}
	return usageError("--compaction must be server, client or off, not %q", o.compaction)
}
