package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/llm"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// gauge counts calls in progress and remembers the peak.
type gauge struct {
	now, peak atomic.Int32
}

func (g *gauge) enter() {
	n := g.now.Add(1)
	for {
		p := g.peak.Load()
		if n <= p || g.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

func (g *gauge) leave() { g.now.Add(-1) }

type idInput struct {
	N int `json:"n"`
}

func calls(name string, n int) []llm.ToolUse {
	cs := make([]llm.ToolUse, n)
	for i := range cs {
		cs[i] = llm.ToolUse{ID: fmt.Sprintf("%s_%d", name, i), Name: name, Input: json.RawMessage(fmt.Sprintf(`{"n": %d}`, i))}
	}
	return cs
}

// TestConcurrencyLimit runs calls that each take 200 ms of (fake) time and
// checks how many ran at once and how long the batch took.
func TestConcurrencyLimit(t *testing.T) {
	tests := []struct {
		name        string
		max, n      int
		wantPeak    int32
		wantElapsed time.Duration
	}{
		{"default limit 8", 0, 8, 8, 200 * time.Millisecond},
		{"default limit queues the ninth", 0, 9, 8, 400 * time.Millisecond},
		{"limit 2", 2, 6, 2, 600 * time.Millisecond},
		{"limit 1", 1, 3, 1, 600 * time.Millisecond},
		{"no limit", -1, 30, 30, 200 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var g gauge
				work := Must(New("work", "Work for 200 ms.", func(ctx context.Context, in idInput) (int, error) {
					g.enter()
					defer g.leave()
					time.Sleep(200 * time.Millisecond) // simulated work, on the bubble's fake clock
					return in.N, nil
				}))
				r := NewRegistry(Config{MaxConcurrency: tt.max})
				if err := r.Register(work); err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				got := r.Run(t.Context(), calls("work", tt.n))
				if elapsed := time.Since(start); elapsed != tt.wantElapsed {
					t.Errorf("batch took %v, want %v", elapsed, tt.wantElapsed)
				}
				if p := g.peak.Load(); p != tt.wantPeak {
					t.Errorf("peak concurrency %d, want %d", p, tt.wantPeak)
				}
				for i, res := range got {
					if want := textResult(fmt.Sprintf("work_%d", i), fmt.Sprint(i)); !cmp.Equal(want, res) {
						t.Errorf("result %d = %+v, want %+v", i, res, want)
					}
				}
			})
		})
	}
}

// TestSequential checks that the calls of a tool alone in its Queue run one
// at a time in call order while other tools' calls run alongside them.
func TestSequential(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seqGauge, allGauge gauge
		var mu sync.Mutex
		var order []int
		seq := Must(New("seq", "Append.", func(ctx context.Context, in idInput) (string, error) {
			seqGauge.enter()
			allGauge.enter()
			defer seqGauge.leave()
			defer allGauge.leave()
			mu.Lock()
			order = append(order, in.N)
			mu.Unlock()
			time.Sleep(100 * time.Millisecond)
			return "ok", nil
		}))
		seq.Queue = "seq" // alone in its queue: sequential
		par := Must(New("par", "Work.", func(ctx context.Context, in idInput) (string, error) {
			allGauge.enter()
			defer allGauge.leave()
			time.Sleep(100 * time.Millisecond)
			return "ok", nil
		}))
		r := NewRegistry(Config{MaxConcurrency: -1})
		if err := r.Register(seq, par); err != nil {
			t.Fatal(err)
		}
		// Interleave 6 sequential calls with 4 parallel ones.
		var cs []llm.ToolUse
		s, p := calls("seq", 6), calls("par", 4)
		for i := range s {
			cs = append(cs, s[i])
			if i < len(p) {
				cs = append(cs, p[i])
			}
		}
		start := time.Now()
		results := r.Run(t.Context(), cs)
		if elapsed, want := time.Since(start), 600*time.Millisecond; elapsed != want {
			t.Errorf("batch took %v, want %v (6 sequential calls of 100 ms)", elapsed, want)
		}
		if diff := cmp.Diff([]int{0, 1, 2, 3, 4, 5}, order); diff != "" {
			t.Errorf("sequential order (-want +got):\n%s", diff)
		}
		if p := seqGauge.peak.Load(); p != 1 {
			t.Errorf("sequential tool ran %d calls at once", p)
		}
		if p := allGauge.peak.Load(); p != 5 {
			t.Errorf("peak of all calls %d, want 5 (1 sequential + 4 parallel)", p)
		}
		for i, res := range results {
			if res.IsError || res.ToolUseID != cs[i].ID {
				t.Errorf("result %d = %+v for call %s", i, res, cs[i].ID)
			}
		}
	})
}

// TestSequentialStartOrder starts a queue's calls one by one, as the agent
// does while the model streams, including one with bad input, and waits for
// them in reverse order.
func TestSequentialStartOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		started := map[int]time.Duration{}
		t0 := time.Now()
		seq := Must(New("seq", "Record.", func(ctx context.Context, in idInput) (int, error) {
			mu.Lock()
			started[in.N] = time.Since(t0)
			mu.Unlock()
			time.Sleep(time.Second)
			return in.N, nil
		}))
		seq.Queue = "seq" // alone in its queue: sequential
		r := NewRegistry(Config{})
		if err := r.Register(seq); err != nil {
			t.Fatal(err)
		}
		cs := calls("seq", 4)
		cs[1].Input = json.RawMessage(`{"n": "one"}`) // fails validation at once
		waits := make([]func() llm.ToolResult, len(cs))
		for i, c := range cs {
			waits[i] = r.Start(t.Context(), c)
		}
		got := make([]llm.ToolResult, len(cs))
		for i := len(cs) - 1; i >= 0; i-- {
			got[i] = waits[i]()
		}
		if again := waits[0](); !cmp.Equal(again, got[0]) {
			t.Errorf("second wait = %+v, first %+v", again, got[0])
		}
		want := []llm.ToolResult{
			textResult("seq_0", "0"),
			errorResult("seq_1", `invalid input for tool "seq": field "n": got string, want integer`),
			textResult("seq_2", "2"),
			textResult("seq_3", "3"),
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("results (-want +got):\n%s", diff)
		}
		// Call 2 must not overtake call 0 although call 1 failed at once.
		if diff := cmp.Diff(map[int]time.Duration{0: 0, 2: time.Second, 3: 2 * time.Second}, started); diff != "" {
			t.Errorf("start times (-want +got):\n%s", diff)
		}
	})
}

// TestQueue checks that two tools sharing a Queue run their calls one at a
// time, in the order they were started, and that a third tool outside the
// queue runs alongside them.
func TestQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		started := map[string]time.Duration{}
		t0 := time.Now()
		record := func(name string) *Tool {
			return Must(New(name, "Record.", func(ctx context.Context, in idInput) (int, error) {
				mu.Lock()
				started[fmt.Sprintf("%s %d", name, in.N)] = time.Since(t0)
				mu.Unlock()
				time.Sleep(time.Second)
				return in.N, nil
			}))
		}
		write, edit, other := record("write"), record("edit"), record("other")
		write.Queue, edit.Queue, other.Queue = "files", "files", "other"
		r := NewRegistry(Config{})
		if err := r.Register(write, edit, other); err != nil {
			t.Fatal(err)
		}
		cs := []llm.ToolUse{calls("edit", 1)[0], calls("write", 2)[1], calls("other", 3)[2]}
		cs = append(cs, calls("edit", 4)[3])
		r.Run(t.Context(), cs)
		want := map[string]time.Duration{"edit 0": 0, "write 1": time.Second, "other 2": 0, "edit 3": 2 * time.Second}
		if diff := cmp.Diff(want, started); diff != "" {
			t.Errorf("start times (-want +got):\n%s", diff)
		}
		synctest.Wait() // every call's goroutine has returned
		if n := len(r.queues); n != 0 {
			t.Errorf("%d idle queues still hold their last call (and its input)", n)
		}
	})
}

// TestCancel cancels a batch while calls run, wait for a slot, and wait
// their sequential turn, one of them ignoring its context. Run must return
// with a "cancelled" result for each, and no goroutine may remain once the
// stubborn tool returns.
func TestCancel(t *testing.T) {
	defer goleak.VerifyNone(t)
	release := make(chan struct{})
	running := make(chan string, 16)
	var ran atomic.Int32
	honest := Must(New("honest", "Wait for ctx.", func(ctx context.Context, in idInput) (string, error) {
		ran.Add(1)
		running <- "honest"
		<-ctx.Done()
		return "", ctx.Err()
	}))
	stubborn := Must(New("stubborn", "Ignore ctx.", func(ctx context.Context, in idInput) (string, error) {
		ran.Add(1)
		running <- "stubborn"
		<-release
		return "finished anyway", nil
	}))
	seq := Must(New("seq", "Wait for ctx, one at a time.", func(ctx context.Context, in idInput) (string, error) {
		ran.Add(1)
		running <- "seq"
		<-ctx.Done()
		return "", ctx.Err()
	}))
	seq.Queue = "seq"
	r := NewRegistry(Config{MaxConcurrency: 3})
	if err := r.Register(honest, stubborn, seq); err != nil {
		t.Fatal(err)
	}
	var cs []llm.ToolUse
	cs = append(cs, calls("stubborn", 1)...)
	cs = append(cs, calls("honest", 4)...)
	cs = append(cs, calls("seq", 3)...)

	ctx, cancel := context.WithCancelCause(context.Background())
	resc := make(chan []llm.ToolResult)
	go func() { resc <- r.Run(ctx, cs) }()
	for range 3 { // the limit: three calls run, five wait
		<-running
	}
	cancel(errors.New("user pressed Ctrl-C"))
	got := <-resc

	var want []llm.ToolResult
	for _, c := range cs {
		want = append(want, errorResult(c.ID, "cancelled: the tool call did not finish (user pressed Ctrl-C)"))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if n := ran.Load(); n != 3 {
		t.Errorf("%d tools ran, want 3: queued calls must not start after cancellation", n)
	}
	close(release) // the stubborn tool can now return, and the goroutine check pass
}

func TestCancelledBeforeRun(t *testing.T) {
	var ran atomic.Bool
	tl := Must(New("t", "Run.", func(ctx context.Context, in struct{}) (string, error) {
		ran.Store(true)
		return "ran", nil
	}))
	r := NewRegistry(Config{})
	if err := r.Register(tl); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	got := r.Run(ctx, []llm.ToolUse{{ID: "1", Name: "t"}, {ID: "2", Name: "missing"}})
	want := []llm.ToolResult{
		errorResult("1", "cancelled: the tool call did not finish (context canceled)"),
		errorResult("2", `unknown tool "missing"; the available tools are: t`),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if ran.Load() {
		t.Error("the tool ran under a cancelled context")
	}
}

func TestEmptyRegistry(t *testing.T) {
	r := NewRegistry(Config{})
	got := r.Run(t.Context(), []llm.ToolUse{{ID: "1", Name: "x"}})
	if diff := cmp.Diff([]llm.ToolResult{errorResult("1", `unknown tool "x": no tools are available`)}, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if got := r.Run(t.Context(), nil); len(got) != 0 {
		t.Errorf("Run(nil) = %v", got)
	}
}

// TestConcurrentUse exercises the registry from many goroutines for the
// race detector.
func TestConcurrentUse(t *testing.T) {
	r := NewRegistry(Config{MaxConcurrency: 4})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			name := fmt.Sprintf("t%d", i)
			tl := Must(New(name, "Echo.", func(ctx context.Context, in idInput) (int, error) { return in.N, nil }))
			if i%2 == 0 {
				tl.Queue = name
			}
			if err := r.Register(tl); err != nil {
				t.Error(err)
			}
			for _, res := range r.Run(t.Context(), calls(name, 5)) {
				if res.IsError {
					t.Errorf("%s: %v", res.ToolUseID, llm.TextOf(res.Content))
				}
			}
			_ = r.Specs()
		})
	}
	wg.Wait()
	if n := len(r.Specs()); n != 8 {
		t.Errorf("%d tools registered, want 8", n)
	}
}

// TestTimeoutKeepsSlot checks that a call whose handler ignores its
// context gets its timeout result at once, but keeps its queue's turn or
// its concurrency slot until the handler has really returned: no two
// handlers ever run at once.
func TestTimeoutKeepsSlot(t *testing.T) {
	tests := []struct {
		name  string
		queue string
		cfg   Config
	}{
		{"Queue", "stuck", Config{MaxConcurrency: -1, Timeout: time.Second}},
		{"MaxConcurrency 1", "", Config{MaxConcurrency: 1, Timeout: time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var g gauge
				release := make(chan struct{})
				stuck := Must(New("stuck", "Ignore ctx.", func(ctx context.Context, in idInput) (string, error) {
					g.enter()
					defer g.leave()
					<-release
					return "late", nil
				}))
				stuck.Queue = tt.queue
				r := NewRegistry(tt.cfg)
				if err := r.Register(stuck); err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				var waits []func() llm.ToolResult
				for _, c := range calls("stuck", 3) {
					waits = append(waits, r.Start(t.Context(), c))
					synctest.Wait() // so that the calls take the slot in order
				}
				got := waits[0]()
				if elapsed := time.Since(start); elapsed != time.Second {
					t.Errorf("the timeout result came after %v, want 1s", elapsed)
				}
				if want := errorResult("stuck_0", `tool "stuck" timed out after 1s`); !cmp.Equal(want, got) {
					t.Errorf("result 0 = %+v, want %+v", got, want)
				}
				synctest.Wait()
				if n := g.now.Load(); n != 1 {
					t.Errorf("%d handlers run after the first call timed out, want 1 (the timed-out one, still holding its slot)", n)
				}
				close(release)
				for i, wait := range waits[1:] {
					if got, want := wait(), textResult(fmt.Sprintf("stuck_%d", i+1), "late"); !cmp.Equal(want, got) {
						t.Errorf("result %d = %+v, want %+v", i+1, got, want)
					}
				}
				if p := g.peak.Load(); p != 1 {
					t.Errorf("peak concurrency %d, want 1", p)
				}
			})
		})
	}
}

// TestWait checks that Wait waits for the handlers that outlive their
// results: one that ignores its context is still running after its timeout
// result, Wait names it when its context ends, and returns nil once the
// handler has returned. A call still working toward its result, perhaps
// another agent's, is not waited for.
func TestWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release, done := make(chan struct{}), make(chan struct{})
		stuck := Must(New("stuck", "Ignore ctx.", func(ctx context.Context, in idInput) (string, error) {
			<-release
			return "late", nil
		}))
		busy := Must(New("busy", "Work until done.", func(ctx context.Context, in idInput) (string, error) {
			<-done
			return "done", nil
		}))
		busy.Timeout = -1
		r := NewRegistry(Config{Timeout: time.Second})
		if err := r.Register(stuck, busy); err != nil {
			t.Fatal(err)
		}
		if err := r.Wait(t.Context()); err != nil {
			t.Errorf("Wait on an idle registry: %v", err)
		}
		working := r.Start(t.Context(), calls("busy", 1)[0])
		if err := r.Wait(t.Context()); err != nil {
			t.Errorf("Wait with a call still working toward its result: %v", err)
		}
		got := r.Run(t.Context(), calls("stuck", 1))
		if want := []llm.ToolResult{errorResult("stuck_0", `tool "stuck" timed out after 1s`)}; !cmp.Equal(want, got) {
			t.Errorf("Run = %+v, want %+v", got, want)
		}
		grace, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		err := r.Wait(grace)
		const want = "tool: 1 call(s) still running: stuck (stuck_0): context deadline exceeded"
		if err == nil || err.Error() != want || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Wait with a handler still running = %v, want %q wrapping context.DeadlineExceeded", err, want)
		}
		close(release)
		if err := r.Wait(t.Context()); err != nil {
			t.Errorf("Wait after the handler returned: %v", err)
		}
		close(done)
		working()
	})
}

// TestStuckSequentialCall checks that a call queued behind a handler that
// timed out and ignores its context waits for it no longer than its own
// timeout, and is then not run, so that one stuck handler cannot hang the
// agent; once the handler returns, the tool runs again.
func TestStuckSequentialCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g gauge
		release := make(chan struct{})
		stuck := Must(New("stuck", "Ignore ctx.", func(ctx context.Context, in idInput) (string, error) {
			g.enter()
			defer g.leave()
			if in.N == 0 {
				<-release
			}
			return "ran", nil
		}))
		stuck.Queue = "stuck"
		stuck.Timeout = time.Second
		r := NewRegistry(Config{})
		if err := r.Register(stuck); err != nil {
			t.Fatal(err)
		}
		cs := calls("stuck", 3)
		start := time.Now()
		got := r.Run(t.Context(), cs[:2])
		want := []llm.ToolResult{
			errorResult("stuck_0", `tool "stuck" timed out after 1s`),
			errorResult("stuck_1", `not run: tool "stuck" is still running an earlier call that timed out; try again later`),
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("results (-want +got):\n%s", diff)
		}
		if elapsed := time.Since(start); elapsed != 2*time.Second {
			t.Errorf("Run took %v, want 2s: the timeout, then the second call's own timeout", elapsed)
		}
		if p := g.peak.Load(); p != 1 {
			t.Errorf("peak concurrency %d, want 1", p)
		}
		close(release)
		if got := r.Run(t.Context(), cs[2:]); !cmp.Equal(got, []llm.ToolResult{textResult("stuck_2", "ran")}) {
			t.Errorf("after the handler returned, Run = %+v, want the tool to run", got)
		}
	})
}
