package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/agentloop/agentloop/internal/apirules"
	"github.com/agentloop/agentloop/llm"
)

// This file is the whole loop: Stream → loop → turn (think, with retries)
// → observe → act; request.go builds the requests.

// Stream appends input to the history and runs the loop on it, yielding
// its events, until the model ends its turn or a limit is hit. A blank
// input goes on from a history that ends with the user's turn, such as
// that of a run that ended [Paused]; otherwise it fails the run.
//
// The last event is always the run's [Result], with a nil error unless
// the run ended [Failed] (the error wraps any [*llm.APIError]) or
// [Cancelled] (ctx.Err()). If the caller stops reading, the run is
// cancelled and no Result is sent. The run ends when every tool handler it
// started has returned, or 5s (toolGrace) after, with a warning naming it.
//
// The history is always left valid. A run that fails or is refused
// leaves it as it was, compactions included. A run cut short keeps its prompt, its
// complete turns and the answer shown so far, marked "[interrupted]", so
// that the next prompt follows a complete exchange.
func (a *Agent) Stream(ctx context.Context, input string) iter.Seq2[Event, error] {
	if a.cfg.Observer == nil {
		return a.stream(ctx, input)
	}
	return a.cfg.Observer.Run(ctx, a, input, func(ctx context.Context) iter.Seq2[Event, error] { return a.stream(ctx, input) })
}

// stream is Stream without its Observer.
func (a *Agent) stream(ctx context.Context, input string) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		if !a.busy.CompareAndSwap(false, true) {
			yield(Result{State: Failed}, errBusy)
			return
		}
		defer a.busy.Store(false)
		parent := ctx
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		if a.cfg.MaxDuration > 0 {
			var stop context.CancelFunc
			ctx, stop = a.rt.WithTimeout(ctx, a.cfg.MaxDuration, errMaxDuration)
			defer stop()
		}
		ctx, spent := newMeter(ctx, a.cfg.MaxCostUSD, a.cfg.MaxTotalTokens)
		r := &run{Agent: a, ctx: ctx, cancel: cancel, yield: yield, spent: spent, wake: make(chan struct{}, 1)}
		r.specs = a.rt.Specs()
		if !slices.ContainsFunc(a.cfg.ServerTools, llm.IsToolSearch) { // the API would refuse deferred tools
			r.specs = slices.Clone(r.specs)
			for i := range r.specs {
				r.specs[i].DeferLoading = false
			}
		}
		rollback := a.cfg.History.Checkpoint()
		state, err := r.loop(input)
		// Every call's context has been cancelled by now.
		grace, stopGrace := a.rt.WithTimeout(context.WithoutCancel(ctx), toolGrace, context.DeadlineExceeded)
		if err := a.rt.Wait(grace); err != nil {
			r.cfg.Logger.Warn("agent: a tool handler ignored its cancelled context", "err", err)
		}
		stopGrace()
		switch {
		case r.stopped:
			state = Cancelled
		case err != nil && context.Cause(ctx) == errMaxDuration:
			state, err = TimeLimit, nil
		case err != nil && parent.Err() != nil:
			state, err = Cancelled, parent.Err()
		case err != nil:
			state, err = Failed, fmt.Errorf("agent: iteration %d: %w", r.iter, err)
		}
		switch {
		case state == Failed || state == Refused || state == Blocked:
			rollback()
		case state == Cancelled || state == TimeLimit:
			interrupt(a.cfg.History, r.shown)
		}
		a.cfg.History.Repair() // whatever happened, leave a history the API accepts
		if r.stopped {
			return
		}
		used, usd := spent.total()
		res := Result{Text: r.text, State: state, Iterations: r.iter, Usage: used, CostUSD: usd}
		r.emit(nil) // the nested runs' last events
		yield(res, err)
	}
}

const toolGrace = 5 * time.Second // how long a run's end waits for handlers that ignore ctx

var errMaxDuration = errors.New("agent: Config.MaxDuration exceeded")

// A run is the state of one call of Stream.
type run struct {
	*Agent
	ctx     context.Context // cancelled when the caller stops reading or MaxDuration passes; carries spent
	cancel  context.CancelCauseFunc
	yield   func(Event, error) bool
	stopped bool // the caller stopped reading
	specs   []llm.ToolSpec
	iter    int           // model calls so far
	usage   llm.Usage     // its own, summed over every model call, retries included
	spent   *meter        // its usage and cost and its subagents', for the limits and the Result
	mu      sync.Mutex    // guards relayed
	relayed []Event       // from its tool calls, to yield on its goroutine (nested.go)
	wake    chan struct{} // holds a token while relayed events wait
	text    string        // text of the latest turn
	repeats repeats
	shown   string // text the latest attempt, if it failed, had shown, for an interrupted run
	cont    string // latest code execution container id, for the next request
}

// emit yields the events relayed, then e unless nil, unless the caller
// has stopped reading, which cancels the run.
func (r *run) emit(e Event) {
	r.mu.Lock()
	q := r.relayed
	r.relayed = nil
	r.mu.Unlock()
	if e != nil {
		q = append(q, e)
	}
	for _, e := range q {
		if !r.stopped && !r.yield(e, nil) {
			r.stopped = true
			r.cancel(errors.New("agent: the caller stopped reading the stream"))
		}
	}
}

// loop is the think → act → observe cycle; Stream turns its error to a state.
func (r *run) loop(input string) (State, error) {
	if r.spent.budgeted && r.model.Price == (llm.Price{}) { // a subagent's budget is its parent's
		return Failed, unpriced(r.cfg.History.Config().Model)
	}
	r.cfg.History.SetPrefix(r.cfg.System, r.specs)
	if !apirules.IsBlank(input) {
		d := r.hooks(r.ctx, HookEvent{Point: PromptSubmit, Prompt: input})
		if d.Deny != "" {
			r.text = d.Deny
			return Blocked, nil
		}
		r.cfg.History.AppendUser(llm.Text{Text: input}, llm.Text{Text: d.Context}) // which drops a blank Context
	} else if msgs := r.cfg.History.Messages(); len(msgs) == 0 || msgs[len(msgs)-1].Role != llm.User {
		return Failed, errEmptyPrompt
	}
	for {
		if err := r.ctx.Err(); err != nil {
			return Cancelled, err
		}
		if lim := r.spent.reached(); lim != "" {
			return lim, nil
		}
		// The best-effort answer, if asked for, is one more call without tools.
		final := r.iter >= r.cfg.MaxIterations
		if final && !r.cfg.FinalAnswer {
			return IterationLimit, nil
		}
		if r.iter > 0 && !final && r.rt.Pause() { // each run takes a turn at least
			return Paused, nil
		}
		r.iter++
		t, err := r.turn(final)
		if err != nil {
			return Failed, err
		}
		state, next := r.observe(t)
		t.cancel() // the turn's calls have all answered
		switch {
		case state == Refused, !final && !next:
			return state, nil
		case final:
			return IterationLimit, nil
		}
	}
}

// A turn is one assistant turn and the tool calls it started on the way.
type turn struct {
	msg     llm.Message
	stop    llm.StopReason
	usage   llm.Usage
	calls   []*pending // in tool_use order
	repeats repeats    // the repeat state after this turn's calls
	yielded bool       // the model yielded at least one event
	cancel  context.CancelFunc
}

// turn streams one model turn, retried up to Config.MaxAttempts times on a
// transient error after output arrived (before, the llm client retries),
// and once, compacted, on a prompt too long or a turn out of context.
func (r *run) turn(final bool) (*turn, error) {
	compacted := false
	for attempt := 1; ; attempt++ {
		req, err := r.request(final)
		if err != nil {
			return nil, err
		}
		r.emit(TurnStart{Iteration: r.iter})
		t, err := r.think(req, final)
		r.usage = r.usage.Add(t.usage)
		r.spent.add(t.usage, r.model.Price.Cost(t.usage))
		if err == nil {
			r.emit(UsageUpdate{Turn: t.usage, Total: r.usage, CostUSD: r.model.Price.Cost(r.usage)})
			return t, nil
		}
		switch {
		case r.ctx.Err() != nil:
			return nil, context.Cause(r.ctx)
		case !compacted && errors.Is(err, llm.ErrPromptTooLong):
			compacted = true
			r.cfg.History.MarkOverflow(err)
			if cerr := r.compact(); cerr != nil {
				return nil, fmt.Errorf("%w (compacting after it: %v)", err, cerr)
			}
		case t.yielded && attempt < r.cfg.MaxAttempts && llm.IsRetryable(err):
			if err := r.rt.Backoff(r.ctx, attempt, err); err != nil {
				return nil, err
			}
			r.cfg.Logger.Warn("agent: model turn failed mid-stream; retrying", "attempt", attempt, "err", err)
		default:
			return nil, err
		}
		r.emit(Retry{Attempt: attempt + 1, Error: err.Error(), Err: err, Discard: t.yielded})
	}
}

// think streams one model turn: it passes the events on, assembles the turn
// and starts each tool call at its block's stop, while later blocks still
// stream. On error the calls that started are kept (see keep), and the
// partial turn only says whether output had arrived.
func (r *run) think(req llm.Request, final bool) (t *turn, err error) {
	ctx, cancel := context.WithCancel(r.ctx)
	t = &turn{cancel: cancel, repeats: r.repeats}
	var asm llm.Assembler
	var out llm.Turn // set by the body once the stream ends well
	defer func() {
		r.shown = "" // a turn that ends well goes into the history whole
		if err != nil {
			out = asm.Turn()
			r.shown = llm.TextOf(out.Message.Content) + llm.TextOf(out.Incomplete)
			r.keep(t)
		}
		t.usage = out.Usage // a failed attempt is billed too
		// Code runs on only in its container; a retry may continue a failed one's.
		r.cont = cmp.Or(out.Container, r.cont)
	}()
	ids := make(map[int]string) // tool_use block index → call id
	for ev, err := range r.cfg.Model.Stream(ctx, req) {
		if err != nil {
			return t, err
		}
		t.yielded = true
		block, _ := asm.Add(ev) // a block only when ev completes it
		switch ev := ev.(type) {
		case llm.TextDelta:
			if ev.Text != "" {
				r.emit(TextDelta{Text: ev.Text})
			}
		case llm.ThinkingDelta:
			if ev.Thinking != "" {
				r.emit(ThinkingDelta{Thinking: ev.Thinking})
			}
		case llm.ToolUseStart:
			ids[ev.Index] = ev.ID
			r.emit(ToolCallStart{ID: ev.ID, Name: ev.Name})
		case llm.ToolInputDelta:
			if id, ok := ids[ev.Index]; ok && ev.PartialJSON != "" {
				r.emit(ToolInputDelta{ID: id, PartialJSON: ev.PartialJSON})
			}
		case llm.BlockStop:
			if tu, ok := block.(llm.ToolUse); ok { // complete: start it now
				t.calls = append(t.calls, r.startCall(ctx, &t.repeats, tu, final))
			}
		}
		if r.stopped {
			return t, context.Cause(r.ctx)
		}
	}
	out = asm.Turn()
	if !out.Done {
		return t, llm.ErrIncompleteStream
	}
	t.msg, t.stop = out.Message, out.StopReason
	if t.stop == llm.ModelContextWindowExceeded {
		return t, errContextWindow // turn compacts and asks again
	}
	if c, ok := serverCompaction(r.cfg.History, t.msg, out.Usage); ok {
		r.cfg.Logger.Info("agent: the server compacted the history", "before", c.Before)
		r.emit(Compacted{c})
	}
	r.cut(t, out.Incomplete)
	r.text = llm.TextOf(t.msg.Content)
	return t, nil
}

// observe applies the turn's stop reason: the state the run ends in, if it
// does, and whether the loop goes on. Whatever the stop reason (tool_use,
// or max_tokens cutting a later block), answered calls keep the history
// valid and the model going; only a refusal ends the run first.
func (r *run) observe(t *turn) (State, bool) {
	switch {
	case t.stop == llm.Refusal:
		// Stream takes the refused exchange back, as the API asks: the
		// calls started are cancelled, and their results dropped.
		t.cancel()
		for _, p := range t.calls {
			p.wait()
		}
		return Refused, false
	case len(t.calls) > 0:
		r.act(t)
		return "", true
	}
	if len(t.msg.Content) > 0 {
		r.cfg.History.AppendAssistant(t.msg, t.usage)
	}
	switch t.stop {
	case llm.PauseTurn, llm.CompactionStop:
		// Sent back as the last message, the paused turn resumes: after a
		// compaction, from the summary.
		return "", true
	case llm.MaxTokens:
		return Truncated, false
	case llm.EndTurn, llm.StopSequence, llm.ToolUseStop: // tool_use: only server tools ran
	default:
		r.cfg.Logger.Warn("agent: unknown stop reason; treating it as end_turn", "stop_reason", t.stop)
	}
	// A hook may keep the model going, within the iteration limit. A blank
	// reason is none: no user turn holds it, and the answer sent back last
	// would be a prefill.
	if d := r.hooks(r.ctx, HookEvent{Point: BeforeStop, Text: r.text}); !apirules.IsBlank(d.Continue) && r.iter < r.cfg.MaxIterations {
		r.cfg.History.AppendUser(llm.Text{Text: d.Continue})
		return "", true
	}
	return Finished, false
}

// A pending call is a tool call started while its turn streams. wait
// returns its result and its own running time, once.
type pending struct {
	call llm.ToolUse
	ran  bool // the Runtime started it: the loop did not answer it itself
	wait func() (llm.ToolResult, time.Duration)
}

// startCall reports call and starts it under the turn's ctx, unless the
// loop's own rules or a hook stop it: on the stream's goroutine, to see
// calls in order and let a hook ask a person. A hook's rewritten input
// runs; the history keeps the model's.
func (r *run) startCall(ctx context.Context, rep *repeats, call llm.ToolUse, final bool) *pending {
	r.emit(ToolCall{ID: call.ID, Name: call.Name, Input: call.Input})
	raw, bad := apirules.InvalidInput(call.Input)
	switch limit := r.cfg.RepeatLimit; {
	case final:
		return r.notRun(call, finalNotRun)
	case bad:
		return r.notRun(call, fmt.Sprintf(invalid, raw))
	case rep.see(call) >= limit && limit > 0: // records only the calls the cases above let through
		return r.notRun(call, fmt.Sprintf(repeating, rep.n))
	}
	seen, run := call, call // seen is a hook's to read, not to change what runs
	d := r.hooks(ctx, HookEvent{Point: BeforeTool, Call: &seen})
	if d.Deny != "" {
		return r.notRun(call, "denied: "+d.Deny)
	}
	if d.Input != nil {
		run.Input = d.Input // the Runtime checks it, as it is not the Assembler's
	}
	return &pending{call: call, ran: true, wait: r.rt.Start(context.WithValue(ctx, callKey{}, callSite{r, call.ID}), run)}
}

// notRun returns a call that was not run, whose is_error result says why.
func (r *run) notRun(call llm.ToolUse, why string) *pending {
	res := llm.ToolResult{ToolUseID: call.ID, Content: []llm.Block{llm.Text{Text: why}}, IsError: true}
	return &pending{call: call, wait: func() (llm.ToolResult, time.Duration) { return res, 0 }}
}

// act appends turn t and the results of its calls, in tool_use order, to
// the history.
func (r *run) act(t *turn) {
	r.cfg.History.AppendAssistant(t.msg, t.usage)
	r.repeats = t.repeats
	results := make([]llm.Block, len(t.calls))
	for i, p := range t.calls {
		results[i] = r.collect(p)
	}
	r.cfg.History.AppendUser(results...)
}

// collect waits for call p and reports its outcome, as the hooks leave it.
func (r *run) collect(p *pending) llm.ToolResult {
	res, took := p.wait()
	if call := p.call; p.ran { // a hook's to read, as the history keeps the model's
		d := r.hooks(r.ctx, HookEvent{Point: AfterTool, Call: &call, Result: &res})
		if d.Content != nil {
			res.Content = d.Content
		}
		if d.Context != "" {
			res.Content = append(res.Content[:len(res.Content):len(res.Content)], llm.Text{Text: d.Context})
		}
	}
	r.emit(ToolDone{ID: p.call.ID, Name: p.call.Name, Content: shown(res.Content), IsError: res.IsError, Duration: took})
	return res
}

// keep ends the calls of a turn that failed. A call that ran may have
// changed the world, and the turn that asked for it vanishes: so keep
// waits for each (they run on, unless the run is cancelled) and puts
// those that ran in the history, their tool_use blocks as an assistant
// turn of their own and their real results after it. The model, asked
// again, sees what it already did, and is never left unaware of a side
// effect. A run that then fails rolls them back with the rest.
func (r *run) keep(t *turn) {
	var uses, results []llm.Block
	for _, p := range t.calls {
		if res := r.collect(p); p.ran {
			uses, results = append(uses, p.call), append(results, res)
		}
	}
	t.cancel()
	if len(uses) > 0 {
		r.cfg.History.AppendAssistant(llm.Message{Role: llm.Assistant, Content: uses}, llm.Usage{})
		r.cfg.History.AppendUser(results...)
		r.repeats = t.repeats
	}
}
