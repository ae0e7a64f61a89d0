package memory

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"

	"github.com/agentloop/agentloop/internal/apirules"
	"github.com/agentloop/agentloop/llm"
)

// Config configures a [History]. Its zero value works.
type Config struct {
	// Model is the model of the turns (an agent sends them to it), of
	// count_tokens and of summaries. Default: [llm.DefaultModel].
	Model string
	// ContextWindow is the model's context window in tokens. Default: the
	// model's as [llm.LookupModel] gives it, or 200_000 for a model it does not know.
	ContextWindow int
	// MaxTokens is the turns' max_tokens, room the reply needs in the
	// window. Default: [llm.DefaultMaxTokens].
	MaxTokens int
	// ContextLimit is the compaction threshold in tokens. Compact aims at
	// 60% of it, lest it compact again next turn and lose the prompt cache.
	// Default: ContextWindow − MaxTokens − 5% of ContextWindow (the margin
	// for estimate error).
	ContextLimit int
	// KeepRecent is how many recent assistant turns, each with the user
	// message answering it, compaction keeps verbatim. Default: 4.
	KeepRecent int
	// Counter counts a request's input tokens exactly, such as
	// [llm.Client.CountTokens]: Compact asks it once the estimate reaches
	// 90% of ContextLimit. Default: nil, estimates only.
	Counter func(ctx context.Context, req llm.Request) (int, error)
	// Compaction chooses how the history is kept under ContextLimit: "server"
	// (context editing, then the server's compaction: see
	// [History.ContextManagement]), "client" ([History.Compact] alone) or "off"
	// (never: a run that outgrows the window fails); all but "off" fall back
	// on Compact. Default "": "server" on a model with ServerCompaction in
	// [llm.ModelInfo], else "client" with the context editing the model takes.
	Compaction string
	// Logger receives repairs, the thinking rewrites drop, and failed counts
	// (Compact returns its report). Default: discard.
	Logger *slog.Logger
}

// A History is the conversation of an agent: the messages to send, with the
// usage of the turns that wrote them. It is for one goroutine at a time,
// and never shares internal slices with callers; byte payloads (tool
// inputs, raw blocks) are kept as appended, not copied: don't modify them.
type History struct {
	cfg     Config
	entries []entry

	system      string
	tools       []llm.ToolSpec
	prefixChars int           // characters of system and tools, for estimates
	prefixKey   string        // a hash of system and tools, to see them change
	ratio       float64       // learned characters per token
	model       llm.ModelInfo // llm.LookupModel's cfg.Model; one it does not know binds its thinking
}

// A Snapshot is a history's content as a store keeps it: what
// [History.Snapshot] takes and [Restore] puts back, for a program that
// keeps histories elsewhere than in memory (package memory/jsonl writes
// them as JSON Lines).
type Snapshot struct {
	// Prefix hashes the system prompt and tools last set (see
	// [History.SetPrefix]), so that a history restored under others drops
	// the thinking they invalidate.
	Prefix  string
	Entries []Entry
}

// An Entry is one message of a [Snapshot] with what the history knows of it.
type Entry struct {
	Message llm.Message
	Usage   llm.Usage // of the turn (or summary call) that wrote Message
	Model   string    // that Usage is priced by; of an assistant turn, the model that wrote its thinking
	// Tokens is the exact token count through Message, system and tools
	// included, when the API told it and nothing before changed since; or 0.
	Tokens  int
	Summary bool // a compaction wrote Message
}

// An entry is an Entry with what derives from its message.
type entry struct {
	Entry
	chars       int // the estimate's character count, images excluded
	imageTokens int // the estimated cost of Message's images
	// original holds the tool results compaction cleared, by tool_use_id,
	// for a later summary to read. Not in a [Snapshot].
	original map[string][]llm.Block
	badJSON  bool // Message holds JSON the API cannot take (see badJSON)
}

// defaultRatio is the characters per token until the API counts: about
// right for English and code.
const defaultRatio = 3.5

// New returns an empty history, of cfg with its defaults filled in. It logs
// the compaction strategy it resolved, at debug level, since the default
// depends on the model.
func New(cfg Config) *History {
	// A field not above zero takes its default: max(n, 0) makes it zero for cmp.Or.
	cfg.Model = cmp.Or(cfg.Model, llm.DefaultModel)
	m, _ := llm.LookupModel(cfg.Model) // a model it does not know has no window
	cfg.ContextWindow = cmp.Or(max(cfg.ContextWindow, 0), m.ContextWindow, 200_000)
	cfg.MaxTokens = cmp.Or(max(cfg.MaxTokens, 0), llm.DefaultMaxTokens)
	cfg.ContextLimit = cmp.Or(max(cfg.ContextLimit, 0), max(1, cfg.ContextWindow-cfg.MaxTokens-cfg.ContextWindow/20))
	cfg.KeepRecent = cmp.Or(max(cfg.KeepRecent, 0), 4)
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	h := &History{cfg: cfg, ratio: defaultRatio, model: m}
	h.cfg.Logger.Debug("memory: compaction", "strategy", h.strategy(), "model", h.cfg.Model)
	return h
}

// Config returns the configuration with defaults filled in.
func (h *History) Config() Config { return h.cfg }

// Messages returns the messages to send, as fresh slices; byte payloads
// (tool inputs, raw blocks) are shared, not to be modified.
func (h *History) Messages() []llm.Message {
	out := make([]llm.Message, len(h.entries))
	for i, e := range h.entries {
		out[i] = cloneMessage(e.Message)
	}
	return out
}

// AppendUser appends a user message made of blocks, such as the
// [llm.ToolResult] blocks that answer the last assistant turn, in order.
// Blank text blocks, which the API rejects, are dropped; a message left
// empty is not appended.
func (h *History) AppendUser(blocks ...llm.Block) {
	kept := slices.DeleteFunc(cloneMessage(llm.Message{Content: blocks}).Content, func(b llm.Block) bool {
		t, ok := b.(llm.Text)
		return ok && apirules.IsBlank(t.Text)
	})
	if len(kept) > 0 {
		h.push(entry{Entry: Entry{Message: llm.Message{Role: llm.User, Content: kept}}})
	}
}

// Checkpoint returns a function that puts the history back exactly as it is
// now, counts included, so that a failed run can change nothing.
func (h *History) Checkpoint() (rollback func()) {
	saved := *h
	saved.entries = slices.Clone(h.entries)
	return func() {
		*h = saved
		h.entries = slices.Clone(saved.entries)
	}
}

// AppendAssistant appends a finished assistant turn, every block verbatim,
// with the usage of the turn that produced it. If msg answers a request of
// exactly [History.Messages], that usage makes the count exact and teaches
// the estimator this conversation's characters per token; a zero usage
// only adds an estimate. So does the usage of a turn that used server
// tools, which sums the input of the server's every sampling (404,500
// tokens for a 2,479-token prompt in one recorded pause_turn).
func (h *History) AppendAssistant(msg llm.Message, usage llm.Usage) {
	msg, compacted := h.serverCompacted(cloneMessage(msg))
	msg.Role = llm.Assistant
	e := entry{Entry: Entry{Message: msg, Usage: usage, Model: h.cfg.Model}}
	serverTools := slices.ContainsFunc(msg.Content, func(b llm.Block) bool { // a block of a tool the API ran
		r, ok := b.(llm.RawBlock)
		return ok && r.Type != apirules.CompactionBlock && apirules.Continues(r.Type)
	})
	if input := usage.Context() - usage.OutputTokens; input > 0 && !serverTools {
		// Past the trigger of context editing (any edits, without thinking, clear
		// tool uses), the server may have cleared tool results: then input, as a
		// compacted turn's, measures less than h.entries, and must not teach.
		if !compacted && !(h.ContextManagement(false) != nil && h.Tokens() > h.cfg.ContextLimit/2) {
			h.learn(int(input))
		}
		e.Tokens = int(usage.Context())
	}
	h.push(e)
}

// SetPrefix records the system prompt and tool specs that are sent with
// the messages, so that estimates count them. A prefix other than the
// last one (kept in a [Snapshot], as a hash) rewrites the start of every
// message's prefix: their thinking goes, on a model that binds it.
func (h *History) SetPrefix(system string, tools []llm.ToolSpec) {
	hs, chars := sha256.New(), len(system)
	fmt.Fprintf(hs, "%d:%s", len(system), system)
	for _, t := range tools {
		fmt.Fprintf(hs, "|%d:%s|%d:%s|%d:%s", len(t.Name), t.Name, len(t.Description), t.Description, len(t.InputSchema), t.InputSchema)
		if t.DeferLoading { // read by the model only once a search finds it
			hs.Write([]byte("|deferred"))
			continue
		}
		chars += specChars(t)
	}
	key := hex.EncodeToString(hs.Sum(nil)[:16])
	if h.prefixKey != "" && key != h.prefixKey {
		h.rewrote(0)
	}
	h.system, h.tools, h.prefixChars, h.prefixKey = system, slices.Clone(tools), chars, key
}

func (h *History) push(e entry) { h.entries = append(h.entries, measured(e)) }

// measured returns e with what derives from its message: the estimate's
// measures and whether its JSON is bad. That JSON is checked here, once,
// not at every Repair: a big tool input would cost a scan each.
func measured(e entry) entry {
	e.chars, e.imageTokens = measureBlocks(e.Message.Content)
	e.badJSON = slices.ContainsFunc(e.Message.Content, badJSON)
	return e
}

// cloneMessage copies m and the slices of its blocks a caller could assign
// into; its content is never nil.
func cloneMessage(m llm.Message) llm.Message {
	c := append(make([]llm.Block, 0, len(m.Content)), m.Content...)
	for i, b := range c {
		switch b := b.(type) {
		case llm.ToolResult:
			b.Content = slices.Clone(b.Content)
			c[i] = b
		case llm.Text:
			b.Citations = slices.Clone(b.Citations)
			c[i] = b
		}
	}
	return llm.Message{Role: m.Role, Content: c}
}

// Snapshot returns the history's content, as fresh slices; byte payloads
// are shared, as [History.Messages] shares them.
func (h *History) Snapshot() Snapshot {
	s := Snapshot{Prefix: h.prefixKey, Entries: make([]Entry, len(h.entries))}
	for i, e := range h.entries {
		s.Entries[i] = e.Entry
		s.Entries[i].Message = cloneMessage(e.Message)
	}
	return s
}

// Restore returns a history of s, configured by cfg, and repaired (see
// [History.Repair]), since a stored history may be damaged. Restored for a
// model other than the one that wrote its thinking, it drops the thinking
// from the first block cfg's model cannot read on: the API would drop that
// block, and the gap invalidates all the thinking after it (see apirules).
func Restore(s Snapshot, cfg Config) *History {
	h := New(cfg)
	h.prefixKey = s.Prefix
	for _, e := range s.Entries {
		e.Message, e.Tokens = cloneMessage(e.Message), max(e.Tokens, 0)
		h.push(entry{Entry: e})
	}
	h.Repair()
	if i := slices.IndexFunc(h.entries, func(e entry) bool {
		return e.Model != "" && !apirules.Reads(h.cfg.Model, e.Model) && hasThinking(e)
	}); i >= 0 && !h.model.UnboundThinking {
		h.rewrote(i)
	}
	return h
}
