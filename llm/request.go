package llm

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/agentloop/agentloop/internal/apirules"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	json2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// A Request is one Messages API call. Only fields the caller set are sent.
// Anything else the API takes (stop_sequences, metadata, service_tier)
// goes in Extra.
type Request struct {
	Model     string    // the model name, for example "claude-sonnet-5-5"; required
	MaxTokens int       // the output cap; zero means [DefaultMaxTokens]
	System    string    // the system prompt; empty or blank means none
	Messages  []Message // the conversation, starting with a user message
	Tools     []ToolSpec
	// ServerTools are the tools the API runs itself, sent after Tools, each
	// its declaration as the API takes it, such as
	// {"type":"web_search_20250305","name":"web_search"}: package
	// llm/servertool writes them. Nil means none.
	ServerTools []json.RawMessage
	// ToolChoice constrains tool use. Nil means the API's default (auto).
	ToolChoice *ToolChoice
	// Thinking configures thinking. Nil sends none: the model's default,
	// off on older models and adaptive on current ones.
	Thinking *ThinkingConfig
	// Effort is sent as output_config.effort: "low", "medium", "high",
	// "xhigh" or "max", as far as the model takes it ([ModelInfo].Efforts).
	// Empty sends none: the model's default.
	Effort string
	// OutputSchema, when set, is sent as output_config.format, a
	// json_schema format, so that the API constrains the answer to it. It
	// must be in the subset of JSON Schema the API takes (see
	// [ModelInfo].StructuredOutputs). Empty or null sends none.
	OutputSchema json.RawMessage
	// Cache puts cache_control breakpoints on the last tool, the system
	// prompt and the last message, so that each call of a loop reads the
	// previous one's prefix from the prompt cache.
	Cache bool
	// Container is the code execution container to reuse, as the previous
	// turn's [MessageDelta].Container reported. Empty sends none.
	Container string
	// ContextEdits, when set, are sent as context_management's edits, with
	// the beta header they need. The client's history stays as it is.
	// count_tokens does not take them.
	ContextEdits []ContextEdit
	// Summarize makes this a request for compaction on demand (beta
	// compact-2026-09-04, with its header): it summarises the whole
	// conversation, and the reply is one signed compaction block, with
	// stop_reason [CompactionStop], that later requests send first in place
	// of the messages it summarises.
	Summarize bool
	// Extra holds top-level fields to send as they are, overriding any
	// above, so that new API features need no release of this package.
	Extra map[string]any
}

// DefaultMaxTokens is the output cap of a turn whose max_tokens is not set,
// here and in every layer above: one default for the whole module.
const DefaultMaxTokens = 8192

// ToolSpec describes a client tool to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
	// DeferLoading sends the tool with defer_loading: its definition reaches
	// the model only once a tool search (see [IsToolSearch]), which the
	// request must hold, finds it.
	DeferLoading bool `json:"defer_loading,omitzero"`
}

// ToolChoice constrains which tool the model calls.
type ToolChoice struct {
	Type string `json:"type"`           // "auto", "any", "tool" or "none"
	Name string `json:"name,omitempty"` // the tool to call when Type is "tool"
}

// ThinkingConfig configures thinking.
type ThinkingConfig struct {
	// BudgetTokens is the thinking budget, for the models that take one
	// ([ModelInfo].Thinking has "enabled"). Zero with Adaptive false means
	// thinking is off.
	BudgetTokens int
	// Adaptive lets the model decide how much to think, BudgetTokens ignored.
	Adaptive bool
	// Display is sent as thinking.display: "summarized" returns the text
	// of thinking blocks, among them the progress notes current models
	// write between tool calls; "omitted", the current models' default,
	// returns them empty. Empty sends none.
	Display string
}

// wireRequest is the body of a Messages API call, and of count_tokens
// (without MaxTokens, Container and Stream). The SDK's MessageNewParams
// copy a message's JSON four times and validate it twice: most of the time
// a request echoing a 5 MiB tool input took. Only fields the caller set are
// sent: API version 2026-10-21 rejects temperature, top_p and top_k.
type wireRequest struct {
	Model      string           `json:"model"`
	MaxTokens  int              `json:"max_tokens,omitzero"`
	System     []Block          `json:"system,omitempty"`
	Messages   []Message        `json:"messages"`
	Tools      []jsontext.Value `json:"tools,omitempty"` // the client tools' specs, then the server tools' declarations
	ToolChoice *ToolChoice      `json:"tool_choice,omitempty"`
	Thinking   *wireThinking    `json:"thinking,omitempty"`
	Output     *wireOutput      `json:"output_config,omitempty"`
	Container  string           `json:"container,omitempty"`
	Stream     bool             `json:"stream,omitzero"`
	// Server-side context management (compaction.go).
	ContextManagement map[string][]ContextEdit `json:"context_management,omitempty"` // its "edits"
	Compaction        json.RawMessage          `json:"compaction,omitempty"`
}

type (
	wireThinking struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens,omitzero"`
		Display      string `json:"display,omitempty"`
	}
	wireOutput struct {
		Effort string      `json:"effort,omitempty"`
		Format *wireFormat `json:"format,omitempty"`
	}
	wireFormat struct {
		Type   string          `json:"type"`
		Schema json.RawMessage `json:"schema"`
	}
)

// lenient are the options for all JSON here, encoding/json's grammar.
var lenient = apirules.Lenient

// encodeRequest writes the body of a Messages API call, or with count set
// of a count_tokens call: the parts that take up context. Extra, mostly
// about generation, is not sent to count_tokens, which rejects unknown fields.
func encodeRequest(r Request, count bool) (body, error) {
	if r.Model == "" {
		return nil, errors.New("llm: Request.Model is empty")
	}
	w := wireRequest{Model: r.Model, Messages: r.Messages}
	if !apirules.IsBlank(r.System) { // the API rejects a blank text block
		w.System = []Block{Text{Text: r.System}}
	}
	// The body is written into one buffer sized for it, n and a margin (the
	// encoder grows a bytes.Buffer with under a quarter free), not copied.
	n := 4096 + len(r.System)
	for i, t := range r.Tools {
		if t.Name == "" {
			return nil, fmt.Errorf("llm: tool %d has no name", i)
		}
		if len(bytes.TrimSpace(t.InputSchema)) == 0 {
			t.InputSchema = json.RawMessage(`{"type":"object"}`) // takes no input
		}
		spec, err := json2.Marshal(t, lenient)
		if err != nil {
			return nil, fmt.Errorf("llm: tool %q: %w", t.Name, err)
		}
		w.Tools, n = append(w.Tools, spec), n+len(spec)
	}
	if err := w.addServerTools(r); err != nil {
		return nil, err
	}
	// A big tool input the Assembler checked goes in a part of its own, where
	// the encoder wrote {}: not checked again, nor copied. Any other input is
	// left to the encoder, and so is the whole body when Extra rewrites it.
	var bigs [][]byte
	for i, m := range r.Messages {
		for j, b := range m.Content {
			if b == nil {
				return nil, fmt.Errorf("llm: message %d: content block %d is nil", i, j)
			}
			n += size(b)
			if t, ok := b.(ToolUse); ok && (count || len(r.Extra) == 0) && len(t.Input) >= 64<<10 && t.wellFormed() {
				bigs, n = append(bigs, t.Input), n-len(t.Input)
			}
		}
	}
	if r.Cache {
		// Thinking cannot carry a breakpoint; the caller's message is not changed.
		if n := len(w.Tools); n > 0 {
			w.Tools[n-1] = withCache(w.Tools[n-1], n > len(r.Tools)) // a server tool's may have one
		}
		if len(w.System) > 0 {
			w.System[0] = cached(w.System[0])
		}
		if n := len(r.Messages); n > 0 {
			last := r.Messages[n-1]
			for i, b := range slices.Backward(last.Content) {
				if !apirules.IsThinking(b.blockType()) {
					last.Content = slices.Concat(last.Content[:i], []Block{cached(b)}, last.Content[i+1:])
					w.Messages = append(r.Messages[:n-1:n-1], last)
					break
				}
			}
		}
	}
	if tc := r.ToolChoice; tc != nil {
		w.ToolChoice = &ToolChoice{Type: cmp.Or(tc.Type, "auto")}
		if tc.Type == "tool" {
			w.ToolChoice.Name = tc.Name
		}
	}
	switch th := r.Thinking; {
	case th == nil:
	case th.Adaptive:
		w.Thinking = &wireThinking{Type: "adaptive", Display: th.Display}
	case th.BudgetTokens > 0:
		w.Thinking = &wireThinking{Type: "enabled", BudgetTokens: th.BudgetTokens}
	}
	// A Request that went through JSON (a durable turn's) holds null for none.
	format := len(r.OutputSchema) > 0 && string(r.OutputSchema) != "null"
	if r.Effort != "" || format {
		w.Output = &wireOutput{Effort: r.Effort}
	}
	if format {
		w.Output.Format = &wireFormat{Type: "json_schema", Schema: r.OutputSchema}
	}
	if err := check(r, w, count); err != nil {
		return nil, err
	}
	if !count {
		w.MaxTokens, w.Container, w.Stream = cmp.Or(max(r.MaxTokens, 0), DefaultMaxTokens), r.Container, true
		if len(r.ContextEdits) > 0 {
			w.ContextManagement = map[string][]ContextEdit{"edits": r.ContextEdits}
		}
		if r.Summarize {
			w.Compaction = json.RawMessage(`{"type":"summarize"}`)
		}
	}
	buf := bytes.NewBuffer(make([]byte, 0, n+n/4))
	enc, ends := jsontext.NewEncoder(buf, lenient), []int{} // where each big input's {} ends
	bigInput := json2.MarshalToFunc(func(e *jsontext.Encoder, in json.RawMessage) error {
		if len(ends) == len(bigs) || len(in) == 0 || &in[0] != &bigs[len(ends)][0] {
			return errors.ErrUnsupported // written as usual
		}
		err := e.WriteValue(jsontext.Value("{}"))
		ends = append(ends, int(e.OutputOffset()))
		return err
	})
	if err := json2.MarshalEncode(enc, w, lenient, json2.WithMarshalers(json2.JoinMarshalers(bigInput, blockMarshalers))); err != nil {
		return nil, fmt.Errorf("llm: writing the request: %w", err)
	}
	var b body
	out, from := bytes.TrimSuffix(buf.Bytes(), []byte("\n")), 0 // an Encoder ends a value with a newline
	for i, end := range ends {
		b, from = append(b, out[from:end-2], bigs[i]), end
	}
	if b = append(b, out[from:]); count || len(r.Extra) == 0 {
		return b, nil
	}
	// Extra overrides the fields above, at the cost of a copy of the body.
	var fields map[string]jsontext.Value
	if err := json2.Unmarshal(b[0], &fields, lenient); err != nil { // one part: nothing was spliced
		return nil, err
	}
	for k, v := range r.Extra {
		var err error
		if fields[k], err = json2.Marshal(v, lenient); err != nil {
			return nil, fmt.Errorf("llm: Request.Extra[%q]: %w", k, err)
		}
	}
	out, err := json2.Marshal(fields, lenient, json2.Deterministic(true))
	return body{out}, err
}

// cached returns b with a cache breakpoint, as a RawBlock of its JSON, or b
// if it cannot be written (the request then fails, naming it). Of the
// blocks only a RawBlock may have a breakpoint already, which it keeps: a
// typed block's JSON, which may be a 5 MiB tool result, is not parsed again
// to look.
func cached(b Block) Block {
	raw, err := marshal(b)
	if err != nil {
		return b
	}
	_, isRaw := b.(RawBlock)
	return RawBlock{Type: b.blockType(), JSON: withCache(raw, isRaw)}
}

// withCache returns the compact JSON object raw with "cache_control" added,
// unless it is {} or, when look is set, it has one already.
func withCache(raw []byte, look bool) []byte {
	var has struct {
		CacheControl jsontext.Value `json:"cache_control"`
	}
	if look && (json2.Unmarshal(raw, &has, lenient) != nil || has.CacheControl != nil) || len(raw) <= 2 {
		return raw
	}
	return append(raw[:len(raw)-1:len(raw)-1], `,"cache_control":{"type":"ephemeral"}}`...)
}

// size is about the length of b's JSON: its big fields, and a margin.
func size(b Block) int {
	n := 64 // the names and punctuation
	switch b := b.(type) {
	case Text:
		n += len(b.Text) + len(b.Text)/8 // escapes
	case Thinking:
		n += len(b.Thinking) + len(b.Signature)
	case ToolUse:
		n += len(b.Input)
	case ToolResult:
		for _, c := range b.Content {
			n += size(c)
		}
	case Image:
		n += len(b.Data)
	case RawBlock:
		n += len(b.JSON)
	}
	return n
}

// A body is a request's JSON in parts, sent without joining them.
type body [][]byte

// send returns the option that puts b in a request, with its length, which
// the SDK would give only a []byte body: it is to be posted http.NoBody.
func (b body) send() option.RequestOption {
	n, read := 0, func() io.ReadCloser { bufs := net.Buffers(slices.Clone(b)); return io.NopCloser(&bufs) }
	for _, p := range b {
		n += len(p)
	}
	return option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		req.Body, req.ContentLength, req.GetBody = read(), int64(n), func() (io.ReadCloser, error) { return read(), nil }
		return next(req)
	})
}

// The edits the API documents, for [ContextEdit].Type: context editing
// (beta context-management-2025-06-27) and compaction at a token threshold
// (beta compact-2026-01-12). Request sends the beta headers its edits need.
const (
	ClearToolUses = "clear_tool_uses_20250919"
	ClearThinking = "clear_thinking_20251015"
	Compact       = "compact_20260112"
)

// A ContextEdit is one strategy of a request's context management (see
// [Request].ContextEdits): an edit the API makes to the prompt on the
// server, before the model reads it. A zero field takes the API's default;
// fields other than those of its Type must stay zero.
type ContextEdit struct {
	Type string `json:"type"`
	// Trigger is when the edit applies, in "input_tokens" (for Compact at
	// least 50,000, default 150,000) or "tool_uses".
	Trigger *EditLimit `json:"trigger,omitempty"`
	// Keep is the "tool_uses" ClearToolUses keeps (default 3), or the
	// "thinking_turns" ClearThinking keeps (default 1).
	Keep *EditLimit `json:"keep,omitempty"`
	// ClearAtLeast makes ClearToolUses clear this many input tokens or
	// none, so that a clear is worth the prompt cache it breaks.
	ClearAtLeast *EditLimit `json:"clear_at_least,omitempty"`
}

// An EditLimit is an amount in a [ContextEdit], such as {"input_tokens", N}.
type EditLimit struct {
	Type  string `json:"type"`
	Value int    `json:"value"`
}

// summarizeBeta is the beta of a [Request].Summarize.
const summarizeBeta = "compact-2026-09-04"

// beta returns the anthropic-beta header r's context management needs.
func (r Request) beta() string {
	need := map[string]string{ClearToolUses: "context-management-2025-06-27",
		ClearThinking: "context-management-2025-06-27", Compact: "compact-2026-01-12"}
	var betas []string
	if r.Summarize {
		betas = append(betas, summarizeBeta)
	}
	for _, e := range r.ContextEdits {
		if b := need[e.Type]; b != "" && !slices.Contains(betas, b) {
			betas = append(betas, b)
		}
	}
	return strings.Join(betas, ",")
}

// WebSearchPrice is what one web search costs, in USD, on every model: $10
// per 1,000 searches (the pricing page). A web fetch costs only the tokens
// it adds; code execution is billed by container hour, which no usage
// reports, so [Price.Cost] leaves it out.
const WebSearchPrice = 10.0 / 1000

// ServerToolUse counts the uses of the server tools that usage reports.
type ServerToolUse struct {
	WebSearchRequests int64 `json:"web_search_requests,omitempty"`
	WebFetchRequests  int64 `json:"web_fetch_requests,omitempty"`
}

// IsToolSearch reports whether decl, a server tool's declaration, is a tool
// search tool's (package llm/servertool names their types): a request that
// sends a [ToolSpec] with DeferLoading must hold one among its
// [Request].ServerTools.
func IsToolSearch(decl json.RawMessage) bool {
	var d declaration
	return json2.Unmarshal(decl, &d, lenient) == nil && isToolSearch(d.Type)
}

// declaration is what llm reads of a server tool's declaration, which it
// sends as it came.
type declaration struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

func isToolSearch(typ string) bool { return strings.HasPrefix(typ, "tool_search_tool_") }

// addServerTools appends r's server tools to w's tools, its client tools,
// and checks what the API would refuse: a declaration that is not an
// object with a type and a name, tool search on a model without it, a name
// twice, a deferred tool without a tool search.
func (w *wireRequest) addServerTools(r Request) error {
	search, names := false, map[string]bool{}
	for _, t := range r.Tools {
		names[t.Name] = true
	}
	for i, decl := range r.ServerTools {
		var d declaration
		if json2.Unmarshal(decl, &d, lenient) != nil || d.Type == "" || d.Name == "" {
			return fmt.Errorf("llm: server tool %d is not a JSON object with a type and a name: %.100s", i, decl)
		}
		if m, known := LookupModel(r.Model); known && isToolSearch(d.Type) && !m.ToolSearch {
			return fmt.Errorf("llm: %s does not take the tool search tool: send its tools without DeferLoading", r.Model)
		}
		if names[d.Name] {
			return fmt.Errorf("llm: two tools are named %q: tool names must be unique", d.Name)
		}
		names[d.Name], search = true, search || isToolSearch(d.Type)
		w.Tools = append(w.Tools, bytes.TrimSpace(decl))
	}
	if i := slices.IndexFunc(r.Tools, func(t ToolSpec) bool { return t.DeferLoading }); i >= 0 && !search {
		return fmt.Errorf("llm: tool %q has DeferLoading, but no tool search is among Request.ServerTools: the model could never load it", r.Tools[i].Name)
	}
	return nil
}
