package tool

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/agentloop/agentloop/llm"
)

// Config configures a [Registry]. The zero value works.
type Config struct {
	// MaxConcurrency caps the calls running at once, across every Run and
	// Start. Zero means 8; negative means no cap.
	MaxConcurrency int
	// Timeout bounds each call of a tool whose own [Tool.Timeout] is zero.
	// Zero means 60 seconds; negative means no timeout.
	Timeout time.Duration
	// MaxOutputBytes caps the text of each result, lest a runaway tool fill
	// the context window: the rest is cut, with a note. Zero means 100_000
	// bytes; negative means no cap. Images, which the API limits, are not
	// counted.
	MaxOutputBytes int
	// Logger receives each panic's stack and each timeout. Nil discards.
	Logger *slog.Logger
}

// ErrDuplicate is wrapped by the error [Registry.Register] returns when a
// tool name is already taken.
var ErrDuplicate = errors.New("duplicate tool name")

// A Registry holds the tools the model may call and runs its calls. Make
// one with [NewRegistry]. It is safe for concurrent use.
//
// If a call's context ends first, the model gets a timeout or "cancelled"
// result at once, but the handler keeps its slot and its queue's turn until
// it returns, so that one ignoring its context never runs beside the calls
// the limits keep it from; [Registry.Wait] waits for such handlers.
type Registry struct {
	cfg Config
	log *slog.Logger
	sem *semaphore.Weighted // the MaxConcurrency slots; nil means no cap

	mu      sync.Mutex
	tools   []*Tool         // in registration order
	queues  map[any]*turn   // each queue's latest call, by *Tool or Queue name; the next waits on it
	running map[*Call]*turn // the calls whose goroutine has not returned, for Wait
}

// NewRegistry returns an empty registry configured by cfg.
func NewRegistry(cfg Config) *Registry {
	if cfg.MaxConcurrency == 0 {
		cfg.MaxConcurrency = 8
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.MaxOutputBytes == 0 {
		cfg.MaxOutputBytes = 100_000
	}
	r := &Registry{cfg: cfg, log: cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)),
		queues: make(map[any]*turn), running: make(map[*Call]*turn)}
	if cfg.MaxConcurrency > 0 {
		r.sem = semaphore.NewWeighted(int64(cfg.MaxConcurrency))
	}
	return r
}

// Register adds tools: all of them or, if any is invalid (nil, not built by
// a constructor, a name the API rejects) or its name is taken, none, saying
// which and why. It warns of each tool whose inputs it cannot validate
// against its schema (see [NewRaw]).
func (r *Registry) Register(tools ...*Tool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, t := range tools {
		if err := t.check(); err != nil {
			return err
		}
		named := func(u *Tool) bool { return u.spec.Name == t.spec.Name }
		if slices.ContainsFunc(r.tools, named) || slices.ContainsFunc(tools[:i], named) {
			return fmt.Errorf("tool %q: %w", t.spec.Name, ErrDuplicate)
		}
	}
	r.tools = append(r.tools, tools...)
	for _, t := range tools {
		if t.unvalidated != nil {
			r.log.Warn("tool inputs are checked only for being a JSON object, not against its schema",
				"tool", t.spec.Name, "reason", t.unvalidated)
		}
	}
	return nil
}

// Lookup returns the registered tool with the given name.
func (r *Registry) Lookup(name string) (*Tool, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.IndexFunc(r.tools, func(t *Tool) bool { return t.spec.Name == name })
	if i < 0 {
		return nil, false
	}
	return r.tools[i], true
}

// Specs returns the tools' descriptions for [llm.Request.Tools], in
// registration order: stable, so that the tool list opening every request
// stays a prompt-cache hit.
func (r *Registry) Specs() []llm.ToolSpec {
	r.mu.Lock()
	defer r.mu.Unlock()
	specs := make([]llm.ToolSpec, len(r.tools))
	for i, t := range r.tools {
		specs[i] = t.spec
	}
	return specs
}

// A Call is one request of the model to run a tool: the ID and Name of an
// [llm.ToolUse] block and its JSON Input.
type Call struct {
	ID    string
	Name  string
	Input json.RawMessage
}

// Run runs calls concurrently and returns their results, results[i]
// answering calls[i]. It never fails: an unknown tool, bad input, an error,
// a panic, a timeout or cancellation each become an is_error result telling
// the model what happened. When ctx ends, Run returns promptly, with a
// "cancelled" result for each unfinished call.
func (r *Registry) Run(ctx context.Context, calls []Call) []llm.ToolResult {
	// Not errgroup.SetLimit: the cap is the registry's, shared with the
	// calls an agent Starts, and a queued call must give up when ctx ends.
	waits := make([]func() llm.ToolResult, len(calls))
	for i, c := range calls {
		waits[i] = r.Start(ctx, c)
	}
	results := make([]llm.ToolResult, len(calls))
	for i, wait := range waits {
		results[i] = wait()
	}
	return results
}

// Start starts one call now and returns a function that waits for its
// result, so that an agent can start each call the moment the model has
// streamed it. Calls share the registry's limits with Run, and a queue's
// calls run in the order Start was called. wait returns promptly as Run
// does, and may be called more than once.
func (r *Registry) Start(ctx context.Context, call Call) (wait func() llm.ToolResult) {
	t, ok := r.Lookup(call.Name)
	if !ok {
		return done(r.result(call, errorOutput(r.unknownTool(call.Name))))
	}
	// Checked here, not on the call's goroutine, bad input is answered at once.
	input, err := prepare(t, call.Input)
	if err != nil {
		return done(r.result(call, errorOutput(err.Error())))
	}
	// The first result delivered wins: the handler's, or a timeout's.
	c, mine := &call, &turn{delivered: make(chan struct{}), finished: make(chan struct{})}
	var once sync.Once
	var res llm.ToolResult
	deliver := func(out Output) { once.Do(func() { res = r.result(call, out); close(mine.delivered) }) }
	r.mu.Lock()
	var prev *turn
	if t.Queue != "" {
		prev, r.queues[t.Queue] = r.queues[t.Queue], mine
	} else if t.Sequential {
		prev, r.queues[t] = r.queues[t], mine
	}
	r.running[c] = mine
	r.mu.Unlock()
	go r.run(ctx, t, c, input, prev, mine, deliver)
	return func() llm.ToolResult {
		<-mine.delivered
		return res
	}
}

// A turn is a call's progress and, in a queue, its place: the next call
// waits for finished.
type turn struct {
	delivered chan struct{} // closed when its result is out
	finished  chan struct{} // closed when its goroutine returns, after every earlier call's
}

func done(res llm.ToolResult) func() llm.ToolResult {
	return func() llm.ToolResult { return res }
}

// run runs call c of t on its own goroutine: it waits for its turn (prev)
// and a slot, then runs the handler under the call's timeout.
func (r *Registry) run(ctx context.Context, t *Tool, c *Call, input json.RawMessage, prev, mine *turn, deliver func(Output)) {
	defer func() {
		// Even a call that never ran hands its turn on only after every
		// earlier one finished, lest later calls overtake.
		if prev != nil {
			<-prev.finished
		}
		close(mine.finished)
		r.mu.Lock()
		delete(r.running, c) // for Wait
		r.mu.Unlock()
	}()
	timeout := t.Timeout
	if timeout == 0 {
		timeout = r.cfg.Timeout
	}
	if prev != nil {
		select {
		case <-prev.finished:
		case <-ctx.Done():
		case <-prev.delivered:
			// Its result is out, its handler ignoring its context: wait no
			// longer than this call's timeout.
			var overdue <-chan time.Time
			if timeout > 0 {
				overdue = time.After(timeout)
			}
			select {
			case <-prev.finished:
			case <-ctx.Done():
			case <-overdue:
				deliver(errorOutput(fmt.Sprintf("not run: tool %q is still running an earlier call that timed out; try again later", c.Name)))
				return
			}
		}
	}
	if r.sem != nil && ctx.Err() == nil && r.sem.Acquire(ctx, 1) == nil {
		defer r.sem.Release(1)
	}
	if ctx.Err() != nil { // cancelled while queued: the handler never runs
		deliver(errorOutput(cancelledText(ctx)))
		return
	}
	callCtx, cancel := ctx, context.CancelFunc(func() {})
	if timeout > 0 {
		callCtx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	// ended is what the model reads when the call's context ends first.
	ended := func() Output {
		if ctx.Err() != nil {
			return errorOutput(cancelledText(ctx))
		}
		return errorOutput(fmt.Sprintf("tool %q timed out after %v", c.Name, timeout))
	}
	stop := context.AfterFunc(callCtx, func() {
		if ctx.Err() == nil {
			r.log.Warn("tool call timed out; its handler keeps its slot until it returns",
				"tool", c.Name, "id", c.ID, "timeout", timeout)
		}
		deliver(ended())
	})
	out := r.invoke(callCtx, t, *c, input)
	if stop(); out.IsError && callCtx.Err() != nil {
		// Most likely "context deadline exceeded": say what happened.
		out = ended()
	}
	deliver(out)
}

// Wait waits for the handlers that outlive their results: whose timeout or
// cancellation result is out while they, ignoring their context, still run.
// Calls still working toward a result are not waited for, so that agents
// sharing a registry can each Wait as a run ends. If ctx ends first, the
// error names the handlers still running and wraps context.Cause(ctx).
func (r *Registry) Wait(ctx context.Context) error {
	r.mu.Lock()
	late := make(map[*Call]*turn)
	for c, k := range r.running {
		select {
		case <-k.delivered:
			late[c] = k
		default:
		}
	}
	r.mu.Unlock()
	var names []string
	for c, k := range late {
		select {
		case <-k.finished:
		case <-ctx.Done():
			select {
			case <-k.finished:
			default:
				names = append(names, fmt.Sprintf("%s (%s)", c.Name, c.ID))
			}
		}
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	return fmt.Errorf("tool: %d call(s) still running: %s: %w", len(names), strings.Join(names, ", "), context.Cause(ctx))
}

// invoke runs t's handler and turns a panic into an error result.
func (r *Registry) invoke(ctx context.Context, t *Tool, call Call, input json.RawMessage) (out Output) {
	defer func() {
		if v := recover(); v != nil {
			r.log.Error("tool panicked", "tool", call.Name, "id", call.ID, "panic", v, "stack", string(debug.Stack()))
			out = errorOutput(fmt.Sprintf("tool %q panicked: %v", call.Name, v))
		}
	}()
	out, err := t.handler(ctx, input)
	if err != nil {
		return errorOutput(err.Error())
	}
	return out
}

func cancelledText(ctx context.Context) string {
	return fmt.Sprintf("cancelled: the tool call did not finish (%v)", context.Cause(ctx))
}

func (r *Registry) unknownTool(name string) string {
	var names []string
	for _, s := range r.Specs() {
		names = append(names, s.Name)
	}
	if len(names) == 0 {
		return fmt.Sprintf("unknown tool %q: no tools are available", name)
	}
	slices.Sort(names)
	return fmt.Sprintf("unknown tool %q; the available tools are: %s", name, strings.Join(names, ", "))
}

func errorOutput(msg string) Output {
	return Output{Content: []llm.Block{llm.Text{Text: msg}}, IsError: true}
}

// result makes the tool result answering call from out.
func (r *Registry) result(call Call, out Output) llm.ToolResult {
	return llm.ToolResult{ToolUseID: call.ID, Content: r.shape(out.Content, out.IsError), IsError: out.IsError}
}
