package agent

import (
	"cmp"
	"context"
	"encoding/json"

	"github.com/agentloop/agentloop/llm"
)

// A Hook is called at each point of a run's life that a [HookEvent] names,
// and returns what the run should do there. The hooks of [Config].Hooks
// run in order, on the loop's goroutine, so a hook may block to ask a
// person (in a workflow, in the workflow's own primitives), and bound its
// own time with its ctx. A hook that fails (returns an error) is logged
// and counts as no decision, but before a tool call it denies the call: a
// check that did not run is not a pass.
//
// A hook sees what it needs and nothing that holds a secret: the tool
// call, its result, the prompt, the model's text, the session's name.
type Hook func(ctx context.Context, e HookEvent) (Decision, error)

// A HookPoint names where in a run a hook is called.
type HookPoint string

// The points where hooks are called.
const (
	// BeforeTool: a call the loop's own checks let through, before it
	// starts. Decision.Deny or Input.
	BeforeTool HookPoint = "before_tool"
	// AfterTool: a call that ran, before the model reads its result.
	// Decision.Content or Context.
	AfterTool HookPoint = "after_tool"
	// PromptSubmit: a run's prompt, before it joins the history.
	// Decision.Deny (the run ends [Blocked]) or Context.
	PromptSubmit HookPoint = "prompt_submit"
	// BeforeStop: the model ended its turn, and the run would finish.
	// Decision.Continue, unless the iteration limit is reached.
	BeforeStop HookPoint = "before_stop"
	// BeforeCompact: the history is about to be compacted by the client.
	// No decision.
	BeforeCompact HookPoint = "before_compact"
)

// A HookEvent is what a hook is told; the fields of its Point are set.
type HookEvent struct {
	Point   HookPoint       `json:"point"`
	Session string          `json:"session,omitempty"` // Config.ConversationID
	Prompt  string          `json:"prompt,omitempty"`  // PromptSubmit
	Call    *llm.ToolUse    `json:"call,omitempty"`    // BeforeTool, AfterTool
	Result  *llm.ToolResult `json:"result,omitempty"`  // AfterTool
	Text    string          `json:"text,omitempty"`    // BeforeStop: the model's last turn's text
}

// A Decision is what a hook wants done; its zero value lets the run go
// on unchanged. A field a point does not take is ignored. Of several
// hooks, the first Deny wins; a later Input or Content replaces an earlier
// one; Contexts and Continue reasons are joined.
type Decision struct {
	// Deny, before a tool call, denies it: the model reads the is_error
	// result "denied: <Deny>". On a prompt, it blocks it.
	Deny string
	// Input, before a tool call, is the input it runs with instead, which
	// is checked again as the model's is.
	Input json.RawMessage
	// Content, after a tool call, replaces its result's content, such as
	// with a redacted copy.
	Content []llm.Block
	// Context, after a tool call or on a prompt, is text added for the
	// model: to the result, or after the prompt.
	Context string
	// Continue, when the model would stop, makes it go on, with this
	// text as the next user turn. Blank, it is no decision.
	Continue string
}

// ToolGate returns a hook that asks allow before each tool call and
// denies the call with the error it returns, such as the Approve method
// of package tools/permission's Policy.
func ToolGate(allow func(ctx context.Context, call llm.ToolUse) error) Hook {
	return func(ctx context.Context, e HookEvent) (d Decision, _ error) {
		if e.Point == BeforeTool {
			if err := allow(ctx, *e.Call); err != nil {
				d.Deny = err.Error()
			}
		}
		return d, nil
	}
}

// hooks calls the hooks at e.Point and merges their decisions. A hook that
// fails before a tool call denies it, whatever the others decide: a check
// that did not run is not a pass.
func (r *run) hooks(ctx context.Context, e HookEvent) (d Decision) {
	e.Session = r.cfg.ConversationID
	for i, h := range r.cfg.Hooks {
		got, err := h(ctx, e)
		if err != nil {
			r.cfg.Logger.Warn("agent: a hook failed", "hook", i, "point", e.Point, "err", err)
			if e.Point == BeforeTool {
				d.Deny = "a check of this call failed"
			}
			continue
		}
		d.Deny = cmp.Or(d.Deny, got.Deny)
		if got.Input != nil {
			d.Input = got.Input
		}
		if got.Content != nil {
			d.Content = got.Content
		}
		d.Context = join(d.Context, got.Context)
		d.Continue = join(d.Continue, got.Continue)
	}
	return d
}

func join(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "\n\n" + b
}
