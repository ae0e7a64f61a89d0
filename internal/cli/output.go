package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tools/permission"
	"github.com/agentloop/agentloop/typed"
)

// The --output-format values, Claude Code's: text for a person, json for
// one result object at the end, stream-json for the events as JSON Lines
// (--json is its alias).
const (
	formatText       = "text"
	formatJSON       = "json"
	formatStreamJSON = "stream-json"
)

// checkOutputFormat settles --output-format, which --json sets to
// stream-json; a value, or a --json that contradicts it, is a usage error.
func checkOutputFormat(o *options) error {
	switch o.outputFormat {
	case "":
		o.outputFormat = formatText
		if o.json {
			o.outputFormat = formatStreamJSON
		}
		return nil
	case formatText, formatJSON, formatStreamJSON:
	default:
		return usageError("--output-format %q: want text, json or stream-json", o.outputFormat)
	}
	if o.json && o.outputFormat != formatStreamJSON {
		return usageError("--json is --output-format stream-json, not %s: give one of them", o.outputFormat)
	}
	return nil
}

// An ending is how a prompt's run ended, for renderer.done.
type ending struct {
	res agent.Result
	// outcome is the error that decides the exit status (see
	// session.outcome); nil for a run that ended well.
	outcome error
	// denials are the calls denied for want of someone to ask.
	denials []denial
	// oneShot is whether the prompt came from the command line, not the
	// REPL.
	oneShot bool
	// session is the session's id, or the --session file as given; ""
	// when the conversation is not saved.
	session string
}

// A denial is a call refused because it needed permission and there was
// no terminal to ask on. The fields are Claude Code's permission_denials',
// and the rule that would allow the call.
type denial struct {
	ToolName  string          `json:"tool_name"`
	ToolUseID string          `json:"tool_use_id"`
	ToolInput json.RawMessage `json:"tool_input"`
	Rule      string          `json:"rule"`
}

// newDenial returns the denial of call, if err is an unasked refusal.
func newDenial(call llm.ToolUse, err error) (denial, bool) {
	ue, ok := errors.AsType[*permission.UnaskedError](err)
	if !ok {
		return denial{}, false
	}
	in := call.Input
	if len(in) == 0 {
		in = json.RawMessage("{}")
	}
	return denial{ToolName: call.Name, ToolUseID: call.ID, ToolInput: in, Rule: ue.Rule.String()}, true
}

// maxSuggestion is how long a suggested --allow flag may be in the
// denials line before it is cut.
const maxSuggestion = 120

// denialLine says which calls were denied and the flag that would allow
// each, once per rule: the one line a non-interactive run ends with.
func denialLine(ds []denial) string {
	var parts []string
	seen := map[string]bool{}
	for _, d := range ds {
		if seen[d.Rule] {
			continue
		}
		seen[d.Rule] = true
		flag := "--allow " + shellQuote(d.Rule)
		if strings.Contains(d.Rule, "\n") || len(flag) > maxSuggestion {
			// A heredoc would break the line: a glimpse says which
			// command it was; --output-format json has the whole rule.
			flag = shorten(flag, maxSuggestion)
		}
		parts = append(parts, flag)
	}
	return fmt.Sprintf("%s denied, with no terminal to ask; to allow, rerun with %s",
		plural(len(ds), "call was", "calls were"), strings.Join(parts, " "))
}

// safeWord matches a word the shell takes as it is.
var safeWord = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellQuote returns s as one shell word, in single quotes unless it needs
// none.
func shellQuote(s string) string {
	if safeWord.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// costText is usd in dollars, or "cost unknown" unless priced: a model
// without a price in the model table is not free.
func costText(usd float64, priced bool) string {
	if !priced {
		return "cost unknown"
	}
	return fmt.Sprintf("$%.4f", usd)
}

// summaryLine is the line that ends a one-shot run on a terminal.
func summaryLine(res agent.Result, priced bool, changed int) string {
	return fmt.Sprintf("%s · %d tokens · %s · %s", plural(res.Iterations, "turn", "turns"),
		res.Usage.Context(), costText(res.CostUSD, priced), plural(changed, "file changed", "files changed"))
}

// narrate writes text of a turn that was not the final one to stderr, as
// it writes thinking, when only the final answer goes to stdout.
func (r *textRenderer) narrate(text string) {
	if text = strings.TrimSpace(text); text != "" {
		r.line(r.style.dim(printable(text)))
	}
}

func (r *textRenderer) done(e ending) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopSpin()
	if len(e.denials) > 0 {
		r.line(r.style.warn(visible(denialLine(e.denials))))
	}
	if r.summary && e.oneShot {
		r.line(r.style.dim(summaryLine(e.res, r.priced, len(r.changed))))
	}
	clear(r.changed)
}

func (r *jsonRenderer) done(e ending) {
	if len(e.denials) > 0 {
		r.note("%s", denialLine(e.denials))
	}
}

// resultRecord is the one object --output-format json writes, in Claude
// Code's shape, with agentloop's own fields after Claude Code's.
type resultRecord struct {
	Type    string `json:"type"`    // "result"
	Subtype string `json:"subtype"` // success, error_max_turns, …
	IsError bool   `json:"is_error"`
	// DurationMS is the wall time from the run's first event to its end.
	DurationMS int64 `json:"duration_ms"`
	NumTurns   int   `json:"num_turns"`
	// Result is the final answer: the last model turn's text.
	Result     string  `json:"result"`
	StopReason *string `json:"stop_reason"`
	// SessionID is the session's id, for --resume; with --session, the
	// file as given.
	SessionID         string    `json:"session_id,omitempty"`
	TotalCostUSD      *float64  `json:"total_cost_usd"` // null for a model without a price
	Usage             llm.Usage `json:"usage"`
	PermissionDenials []denial  `json:"permission_denials"`
	// StructuredOutput is the answer as JSON, validated against
	// --json-schema; absent without it.
	StructuredOutput json.RawMessage `json:"structured_output,omitempty"`
	State            agent.State     `json:"state"`           // how the run ended, as package agent names it
	Error            string          `json:"error,omitempty"` // why the run failed or stopped
}

// stopReasons are the API stop reasons of the states that have one.
var stopReasons = map[agent.State]string{
	agent.Finished:  "end_turn",
	agent.Refused:   "refusal",
	agent.Truncated: "max_tokens",
}

// newResultRecord returns the record of a run that ended as e, after d;
// with a schema, with the answer's JSON.
func newResultRecord(e ending, d time.Duration, priced, schema bool) resultRecord {
	rec := resultRecord{Type: "result", Subtype: "success", DurationMS: d.Milliseconds(),
		NumTurns: e.res.Iterations, Result: e.res.Text, SessionID: e.session, Usage: e.res.Usage,
		PermissionDenials: append([]denial{}, e.denials...), State: e.res.State}
	if schema {
		rec.StructuredOutput = typed.Output(e.res)
	}
	if reason, ok := stopReasons[e.res.State]; ok {
		rec.StopReason = &reason
	}
	if priced {
		rec.TotalCostUSD = &e.res.CostUSD
	}
	if e.outcome == nil {
		return rec
	}
	rec.IsError, rec.Error = true, e.outcome.Error()
	switch e.res.State {
	case agent.IterationLimit:
		rec.Subtype = "error_max_turns"
	case agent.TimeLimit:
		rec.Subtype = "error_max_duration"
	case agent.TokenLimit:
		rec.Subtype = "error_max_total_tokens"
	case agent.BudgetLimit:
		rec.Subtype = "error_max_budget_usd" // Claude Code's
	}
	if _, ok := errors.AsType[*typed.OutputError](e.outcome); ok && e.res.State == agent.Failed {
		rec.Subtype = "error_max_structured_output_retries" // Claude Code's
	} else if rec.Subtype == "success" {
		rec.Subtype = "error_during_execution"
	}
	if exitCode(e.outcome) == exitInterrupted {
		rec.State, rec.Error = agent.Cancelled, "interrupted"
	}
	return rec
}

// resultRenderer writes --output-format json: nothing while the run goes
// on, then one JSON object. Notes and errors go to stderr as text.
type resultRenderer struct {
	errw   io.Writer
	json   *jsonRenderer // writes the object, as --json writes a line
	priced bool
	start  time.Time
	now    func() time.Time
}

func newResultRenderer(stdout, stderr io.Writer, priced, schema bool) *resultRenderer {
	return &resultRenderer{errw: stderr, json: newJSONRenderer(stdout, stderr, priced, schema), priced: priced, now: time.Now}
}

func (r *resultRenderer) event(agent.Event, error) {
	if r.start.IsZero() {
		r.start = r.now()
	}
}

func (r *resultRenderer) done(e ending) {
	var d time.Duration
	if !r.start.IsZero() {
		d = r.now().Sub(r.start)
	}
	r.start = time.Time{}
	b, err := marshalNoEscape(newResultRecord(e, d, r.priced, r.json.schema))
	if err != nil {
		fmt.Fprintf(r.errw, "agentloop: cannot encode the result: %v\n", err)
		return
	}
	r.json.write(b)
	r.json.done(e)
}

func (r *resultRenderer) fail(error) {} // the result object holds the error
func (r *resultRenderer) note(format string, args ...any) {
	r.json.note(format, args...)
}
func (r *resultRenderer) pause() {}
func (r *resultRenderer) close() {}
