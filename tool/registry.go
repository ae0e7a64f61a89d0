package tool

import (
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
	// MaxConcurrency caps how many calls run at once, counted across every
	// Run and Start of the registry. Zero means 8; negative means no cap.
	MaxConcurrency int

	// Timeout bounds each call of a tool whose own [Tool.Timeout] is zero.
	// Zero means 60 seconds; negative means no timeout.
	Timeout time.Duration

	// MaxOutputBytes caps the text of each result, so that one runaway
	// tool cannot fill the context window. Longer text is cut, on a UTF-8
	// boundary, and a note says so. Zero means 100_000 bytes; negative
	// means no cap. Images are not counted: the API limits them itself.
	MaxOutputBytes int

	// Logger receives the stack of each panic, each abandoned call, and a
	// debug line per call. Nil discards everything.
	Logger *slog.Logger
}

// ErrDuplicate is wrapped by the error [Registry.Register] returns when a
// tool name is already taken.
var ErrDuplicate = errors.New("duplicate tool name")

// A Registry holds the tools the model may call and runs its calls.
// Make one with [NewRegistry]. It is safe for concurrent use.
type Registry struct {
	cfg Config
	log *slog.Logger
	// sem caps the calls in progress across Run and Start; Run says why
	// it is not errgroup.SetLimit.
	sem *semaphore.Weighted // nil means no cap

	mu     sync.Mutex
	byName map[string]*Tool
	order  []*Tool
	// queues holds, for each sequential tool, a channel closed once its
	// most recently started call has finished. The next call waits on it,
	// which keeps the calls one at a time and in the order of Start.
	queues map[*Tool]chan struct{}
	// running holds the calls whose goroutine has not returned, for Wait;
	// idle is closed whenever running is empty.
	running map[*task]bool
	idle    chan struct{}
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
	r := &Registry{
		cfg:     cfg,
		log:     cfg.Logger,
		byName:  make(map[string]*Tool),
		queues:  make(map[*Tool]chan struct{}),
		running: make(map[*task]bool),
		idle:    make(chan struct{}),
	}
	close(r.idle)
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxConcurrency > 0 {
		r.sem = semaphore.NewWeighted(int64(cfg.MaxConcurrency))
	}
	return r
}

// Register adds tools to the registry. It adds all of them or, if any is
// invalid (nil, not built by a constructor, a name the API rejects) or its
// name is already taken, none, and says which and why. It logs a warning
// for each tool whose inputs cannot be validated against its schema (see
// [NewRaw]).
func (r *Registry) Register(tools ...*Tool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := make(map[string]bool, len(tools))
	for _, t := range tools {
		if err := t.check(); err != nil {
			return err
		}
		name := t.spec.Name
		if _, ok := r.byName[name]; ok || seen[name] {
			return fmt.Errorf("tool %q: %w", name, ErrDuplicate)
		}
		seen[name] = true
	}
	for _, t := range tools {
		r.byName[t.spec.Name] = t
		r.order = append(r.order, t)
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
	t, ok := r.byName[name]
	return t, ok
}

// Specs returns the tools' descriptions for [llm.Request.Tools], in
// registration order. The order is stable so that the tool list, which
// opens every request, stays a prompt-cache hit from turn to turn.
func (r *Registry) Specs() []llm.ToolSpec {
	r.mu.Lock()
	defer r.mu.Unlock()
	specs := make([]llm.ToolSpec, len(r.order))
	for i, t := range r.order {
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
// answering calls[i] with its ToolUseID. It never fails: an unknown tool,
// bad input, an error, a panic, a timeout or cancellation each become an
// is_error result that tells the model what happened.
//
// Run returns promptly when ctx is cancelled: unfinished calls get a
// "cancelled" result. A handler that ignores its context may still be
// running when Run returns; [Registry.Wait] waits for it.
func (r *Registry) Run(ctx context.Context, calls []Call) []llm.ToolResult {
	// Not errgroup with SetLimit, for three reasons. The cap is the
	// registry's, shared with calls the agent Starts while the model
	// streams, so a per-batch limit would not bound them. Start must be
	// called in call order on one goroutine, which is what queues a
	// sequential tool's calls in order. And errgroup's Go blocks for a
	// slot with no context, while a queued call must give up when ctx
	// ends. Start covers all three; Run only starts and collects.
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
// result. An agent uses it to start each tool call as soon as the model has
// streamed it, while the rest of the turn is still arriving.
//
// Calls started with Start share the registry's concurrency cap with Run,
// and calls of a [Tool.Sequential] tool run one at a time in the order
// Start was called. The wait function returns promptly once ctx is
// cancelled or the call times out, as [Registry.Run] does; it may be called
// more than once. The call keeps its slot and its turn until its handler
// has returned; see [Registry.Wait].
func (r *Registry) Start(ctx context.Context, call Call) (wait func() llm.ToolResult) {
	t, ok := r.Lookup(call.Name)
	if !ok {
		return done(r.errorResult(call, r.unknownTool(call.Name)))
	}
	if ctx.Err() != nil {
		return done(r.errorResult(call, cancelledText(ctx)))
	}
	// Checking the input here, not in the call's goroutine, answers a bad
	// call at once and costs the caller only microseconds.
	input, err := prepare(t, call.Input)
	if err != nil {
		return done(r.errorResult(call, err.Error()))
	}
	k := &task{call: call, done: make(chan struct{})}
	r.mu.Lock()
	var prev, mine chan struct{}
	if t.Sequential {
		mine = make(chan struct{})
		prev = r.queues[t]
		r.queues[t] = mine
	}
	if len(r.running) == 0 {
		r.idle = make(chan struct{})
	}
	r.running[k] = true
	r.mu.Unlock()
	go r.run(ctx, t, k, input, prev, mine)
	return func() llm.ToolResult {
		<-k.done
		return k.res
	}
}

// A task is one started call and its result, which is delivered once: by
// the handler's return, or earlier by a timeout or cancellation.
type task struct {
	call Call
	once sync.Once
	done chan struct{} // closed once res is set
	res  llm.ToolResult
}

func (k *task) deliver(res llm.ToolResult) {
	k.once.Do(func() {
		k.res = res
		close(k.done)
	})
}

func done(res llm.ToolResult) func() llm.ToolResult {
	return func() llm.ToolResult { return res }
}

// run runs call k of t, on its own goroutine: it waits for t's turn (prev)
// and a slot, then runs the handler under the call's timeout. If the
// call's context ends first, k's result is delivered at once, but the turn
// and the slot are given back only when the handler has returned, so that
// a handler that ignores its context never runs beside the calls
// Sequential and MaxConcurrency keep it from.
func (r *Registry) run(ctx context.Context, t *Tool, k *task, input json.RawMessage, prev, mine chan struct{}) {
	defer r.finish(k)
	if mine != nil {
		defer func() {
			// Even a call that never ran (cancelled while queued) hands
			// its turn on only after every earlier call has finished, so
			// that later calls cannot overtake them.
			if prev != nil {
				<-prev
			}
			close(mine)
		}()
	}
	cancelled := func() { k.deliver(r.errorResult(k.call, cancelledText(ctx))) }
	if prev != nil {
		select {
		case <-prev:
		case <-ctx.Done():
			cancelled()
			return
		}
	}
	if r.sem != nil {
		if err := r.sem.Acquire(ctx, 1); err != nil {
			cancelled()
			return
		}
		defer r.sem.Release(1)
	}
	if ctx.Err() != nil {
		cancelled()
		return
	}
	timeout := t.Timeout
	if timeout == 0 {
		timeout = r.cfg.Timeout
	}
	callCtx, cancel := ctx, context.CancelFunc(func() {})
	if timeout > 0 {
		callCtx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	stop := context.AfterFunc(callCtx, func() {
		if ctx.Err() == nil {
			r.log.Warn("tool call timed out; its handler keeps its slot until it returns",
				"tool", k.call.Name, "id", k.call.ID, "timeout", timeout)
		}
		k.deliver(r.result(k.call, settle(ctx, callCtx, k.call.Name, timeout, Output{IsError: true})))
	})
	start := time.Now()
	out := r.invoke(callCtx, t, k.call, input)
	stop()
	k.deliver(r.result(k.call, settle(ctx, callCtx, k.call.Name, timeout, out)))
	r.log.LogAttrs(ctx, slog.LevelDebug, "tool call", slog.String("tool", k.call.Name), slog.String("id", k.call.ID),
		slog.Duration("duration", time.Since(start)), slog.Bool("is_error", out.IsError))
}

// finish records that k's goroutine is done, for Wait.
func (r *Registry) finish(k *task) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.running, k)
	if len(r.running) == 0 {
		close(r.idle)
	}
}

// Wait waits until no call of the registry is running: every result has
// been delivered and, unlike the wait functions of Start, every handler has
// returned, which one that ignores its context may do long after its
// timeout or cancellation. If ctx ends first, Wait returns an error that
// names the calls still running and wraps context.Cause(ctx). An agent
// calls it at the end of a run, with a grace period, so that no goroutine
// of the run outlives it unnoticed.
func (r *Registry) Wait(ctx context.Context) error {
	r.mu.Lock()
	idle := r.idle
	r.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
	}
	r.mu.Lock()
	var names []string
	for k := range r.running {
		names = append(names, fmt.Sprintf("%s (%s)", k.call.Name, k.call.ID))
	}
	r.mu.Unlock()
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

// settle decides what the model sees when a call ends. A successful result
// always stands. A failure after the context ended is reported as the
// cancellation or timeout that most likely caused it.
func settle(ctx, callCtx context.Context, name string, timeout time.Duration, out Output) Output {
	if !out.IsError {
		return out
	}
	if ctx.Err() != nil {
		return errorOutput(cancelledText(ctx))
	}
	if callCtx.Err() != nil {
		// The tool's own message is dropped: it is usually just "context
		// deadline exceeded", and the handler may not have returned yet,
		// so keeping it would make the result depend on a race.
		return errorOutput(fmt.Sprintf("tool %q timed out after %v", name, timeout))
	}
	return out
}

func cancelledText(ctx context.Context) string {
	return fmt.Sprintf("cancelled: the tool call did not finish (%v)", context.Cause(ctx))
}

func (r *Registry) unknownTool(name string) string {
	r.mu.Lock()
	names := make([]string, len(r.order))
	for i, t := range r.order {
		names[i] = t.spec.Name
	}
	r.mu.Unlock()
	if len(names) == 0 {
		return fmt.Sprintf("unknown tool %q: no tools are available", name)
	}
	slices.Sort(names)
	return fmt.Sprintf("unknown tool %q; the available tools are: %s", name, strings.Join(names, ", "))
}

func errorOutput(msg string) Output {
	return Output{Content: []llm.Block{llm.Text{Text: msg}}, IsError: true}
}

func (r *Registry) errorResult(call Call, msg string) llm.ToolResult {
	r.log.Debug("tool call failed", "tool", call.Name, "id", call.ID, "error", msg)
	return r.result(call, errorOutput(msg))
}

// result makes the tool result answering call from out.
func (r *Registry) result(call Call, out Output) llm.ToolResult {
	return llm.ToolResult{ToolUseID: call.ID, Content: r.shape(out.Content, out.IsError), IsError: out.IsError}
}
