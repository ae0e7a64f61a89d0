package tool

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/semaphore"

	"github.com/agentloop/agentloop/internal/apirules"
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
	// the context window: the rest is cut, with a note. Zero means 100_000;
	// negative means no cap. Images, which the API limits, are not counted.
	MaxOutputBytes int
	// Logger receives each panic's stack and each timeout. Nil discards.
	Logger *slog.Logger
}

// A Registry holds the tools the model may call and runs its calls. Make
// one with [NewRegistry]. It is safe for concurrent use. If a call's context
// ends first, the model gets a timeout or "cancelled" result at once, but
// the handler keeps its slot and its queue's turn until it returns, so that
// one ignoring its context never runs beside the calls the limits keep it
// from; [Registry.Wait] waits for such handlers.
type Registry struct {
	cfg Config
	sem *semaphore.Weighted // the MaxConcurrency slots; nil means no cap

	mu      sync.Mutex
	tools   []*Tool          // in registration order
	queues  map[string]*turn // each Queue's latest call; the next waits on it
	running map[*turn]bool   // the calls whose goroutine has not returned, for Wait
}

// NewRegistry returns an empty registry configured by cfg.
func NewRegistry(cfg Config) *Registry {
	cfg.MaxConcurrency = cmp.Or(cfg.MaxConcurrency, 8)
	cfg.Timeout = cmp.Or(cfg.Timeout, 60*time.Second)
	cfg.MaxOutputBytes = cmp.Or(cfg.MaxOutputBytes, 100_000)
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	r := &Registry{cfg: cfg, queues: make(map[string]*turn), running: make(map[*turn]bool)}
	if cfg.MaxConcurrency > 0 {
		r.sem = semaphore.NewWeighted(int64(cfg.MaxConcurrency))
	}
	return r
}

// Register adds tools: all, or none if one is nil, not built by a
// constructor or named as one registered, saying which. It warns of each
// tool whose inputs it cannot validate (see [NewRaw]).
func (r *Registry) Register(tools ...*Tool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, t := range tools {
		if t == nil || t.handler == nil {
			return errors.New("tool: a nil *Tool, or one not built with New, NewWithSchema or NewRaw")
		}
		named := func(u *Tool) bool { return u.spec.Name == t.spec.Name }
		if slices.ContainsFunc(r.tools, named) || slices.ContainsFunc(tools[:i], named) {
			return fmt.Errorf("tool %q: duplicate tool name", t.spec.Name)
		}
	}
	r.tools = append(r.tools, tools...)
	for _, t := range tools {
		if t.unvalidated != nil {
			r.cfg.Logger.Warn("tool inputs are checked only for being a JSON object, not against its schema", "tool", t.spec.Name, "reason", t.unvalidated)
		}
	}
	return nil
}

// Lookup returns the registered tool with the given name.
func (r *Registry) Lookup(name string) (*Tool, bool) {
	t, err := r.lookup(name)
	return t, err == nil
}

// Specs returns the tools' descriptions for [llm.Request.Tools], in the
// stable order of registration, lest the tool list miss the prompt cache.
// A Deferrable tool's has DeferLoading set, which an agent keeps only with
// tool search on.
func (r *Registry) Specs() []llm.ToolSpec {
	r.mu.Lock()
	defer r.mu.Unlock()
	specs := make([]llm.ToolSpec, len(r.tools))
	for i, t := range r.tools {
		specs[i] = t.spec
		specs[i].DeferLoading = t.Deferrable
	}
	return specs
}

// Run runs calls, the model's tool_use blocks, concurrently; results[i]
// answers calls[i]. It never fails: an unknown tool, bad input, an error, a
// panic, a timeout or cancellation each become an is_error result saying
// what happened. When ctx ends, unfinished calls answer "cancelled" at once.
func (r *Registry) Run(ctx context.Context, calls []llm.ToolUse) []llm.ToolResult {
	// Not errgroup.SetLimit: the cap is shared with the calls an agent
	// Starts, and a queued call must give up when ctx ends.
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

// Start starts one call now, as the model streams it, and returns a
// function that waits for its result, as promptly as Run, as often as
// called. Calls share the limits with Run; a queue's calls run in Start's order.
func (r *Registry) Start(ctx context.Context, call llm.ToolUse) (wait func() llm.ToolResult) {
	k := &turn{call: call, delivered: make(chan struct{}), finished: make(chan struct{})}
	// Checked here, not on the call's goroutine, bad input is answered at once.
	t, err := r.lookup(call.Name)
	var input json.RawMessage
	if err == nil {
		input, err = prepare(t, call.Input)
	}
	if err != nil {
		r.deliver(k, failure("%v", err))
		return k.wait
	}
	r.mu.Lock()
	var prev *turn
	if t.Queue != "" {
		prev, r.queues[t.Queue] = r.queues[t.Queue], k
	}
	r.running[k] = true
	r.mu.Unlock()
	go r.run(ctx, t, input, prev, k)
	return k.wait
}

// A turn is a call's progress and, in a queue, its place: the next call
// waits for finished. The first result delivered, handler's or timeout's, wins.
type turn struct {
	call      llm.ToolUse
	once      sync.Once
	res       llm.ToolResult
	delivered chan struct{} // closed when res is out
	finished  chan struct{} // closed when its goroutine returns, after every earlier call's
}

func (k *turn) wait() llm.ToolResult {
	<-k.delivered
	return k.res
}

// deliver makes res call k's result, unless it has one.
func (r *Registry) deliver(k *turn, res llm.ToolResult) {
	k.once.Do(func() {
		res.ToolUseID, res.Content = k.call.ID, r.shape(res.Content, res.IsError)
		k.res = res
		close(k.delivered)
	})
}

// run runs call k of t on its own goroutine: it waits for its turn (prev)
// and a slot, then runs the handler under the call's timeout.
func (r *Registry) run(ctx context.Context, t *Tool, input json.RawMessage, prev, k *turn) {
	defer func() {
		// Even a call that never ran hands its turn on only after every
		// earlier one finished, lest later calls overtake.
		if prev != nil {
			<-prev.finished
		}
		close(k.finished)
		r.mu.Lock()
		delete(r.running, k)
		if r.queues[t.Queue] == k {
			delete(r.queues, t.Queue) // the queue is idle: let its input and result go
		}
		r.mu.Unlock()
	}()
	timeout := cmp.Or(t.Timeout, r.cfg.Timeout)
	if timeout < 0 {
		timeout = math.MaxInt64 // none
	}
	ended := func() llm.ToolResult {
		if ctx.Err() != nil {
			return failure("cancelled: the tool call did not finish (%v)", context.Cause(ctx))
		}
		return failure("tool %q timed out after %v", k.call.Name, timeout)
	}
	if prev != nil {
		select {
		case <-prev.delivered: // always before finished
		case <-ctx.Done():
		}
		// A handler ignoring its context may outlive its result: wait for
		// it no longer than this call's timeout.
		select {
		case <-prev.finished:
		case <-ctx.Done():
		case <-time.After(timeout):
			r.deliver(k, failure("not run: tool %q is still running an earlier call that timed out; try again later", k.call.Name))
			return
		}
	}
	if r.sem != nil && ctx.Err() == nil && r.sem.Acquire(ctx, 1) == nil {
		defer r.sem.Release(1)
	}
	if ctx.Err() != nil { // cancelled while queued: the handler never runs
		r.deliver(k, ended())
		return
	}
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stop := context.AfterFunc(callCtx, func() {
		if ctx.Err() == nil {
			r.cfg.Logger.Warn("tool call timed out; its handler keeps its slot until it returns", "tool", k.call.Name, "id", k.call.ID, "timeout", timeout)
		}
		r.deliver(k, ended())
	})
	out := r.invoke(callCtx, t, k.call, input)
	if stop(); out.IsError && callCtx.Err() != nil {
		out = ended() // most likely "context deadline exceeded": say what happened
	}
	r.deliver(k, out)
}

// Wait waits for the handlers that, ignoring their context, still run after
// their timeout or cancellation result; not for calls working toward one,
// so that agents sharing a registry can each Wait as a run ends. If ctx
// ends first, the error names those running and wraps its cause.
func (r *Registry) Wait(ctx context.Context) error {
	r.mu.Lock()
	var late []*turn
	for k := range r.running {
		select {
		case <-k.delivered:
			late = append(late, k)
		default:
		}
	}
	r.mu.Unlock()
	var names []string
	for _, k := range late {
		select {
		case <-k.finished:
		case <-ctx.Done():
			select {
			case <-k.finished:
			default:
				names = append(names, fmt.Sprintf("%s (%s)", k.call.Name, k.call.ID))
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
func (r *Registry) invoke(ctx context.Context, t *Tool, call llm.ToolUse, input json.RawMessage) (out llm.ToolResult) {
	defer func() {
		if v := recover(); v != nil {
			r.cfg.Logger.Error("tool panicked", "tool", call.Name, "id", call.ID, "panic", v, "stack", string(debug.Stack()))
			out = failure("tool %q panicked: %v", call.Name, v)
		}
	}()
	out, err := t.handler(ctx, input)
	if err != nil {
		return failure("%s", err.Error())
	}
	return out
}

// lookup is Lookup, with an error for the model naming the tools there are.
func (r *Registry) lookup(name string) (*Tool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := slices.IndexFunc(r.tools, func(t *Tool) bool { return t.spec.Name == name }); i >= 0 {
		return r.tools[i], nil
	}
	names := make([]string, len(r.tools))
	for i, t := range r.tools {
		names[i] = t.spec.Name
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("unknown tool %q: no tools are available", name)
	}
	slices.Sort(names)
	return nil, fmt.Errorf("unknown tool %q; the available tools are: %s", name, strings.Join(names, ", "))
}

// failure is an is_error result that says what went wrong.
func failure(format string, args ...any) llm.ToolResult {
	return llm.ToolResult{Content: []llm.Block{llm.Text{Text: fmt.Sprintf(format, args...)}}, IsError: true}
}

// shape makes content fit to send: it drops nil blocks and blank text, which
// the API rejects, cuts text past MaxOutputBytes on a UTF-8 boundary with a
// note, and gives an error a message if it has none. Images are not counted.
func (r *Registry) shape(content []llm.Block, isError bool) []llm.Block {
	limit, total := r.cfg.MaxOutputBytes, 0
	var out []llm.Block // nil if nothing is left
	for _, b := range content {
		t, isText := b.(llm.Text)
		if isText {
			total += len(t.Text)
			if over := total - limit; limit >= 0 && over > 0 { // past the limit: later text is cut whole
				n := max(len(t.Text)-over, 0)
				for n > 0 && !utf8.RuneStart(t.Text[n]) { // back to the start of a rune
					n--
				}
				t.Text = t.Text[:n]
			}
			b = t
		}
		if b != nil && !(isText && apirules.IsBlank(t.Text)) {
			out = append(out, b)
		}
	}
	if limit >= 0 && total > limit {
		out = append(out, llm.Text{Text: fmt.Sprintf("[output truncated: the tool returned %d bytes of text; only the first %d are shown]", total, limit)})
	}
	if len(out) == 0 && isError {
		return []llm.Block{llm.Text{Text: "the tool failed without saying why"}}
	}
	return out
}
