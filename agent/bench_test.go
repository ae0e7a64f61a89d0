package agent

import (
	"context"
	"fmt"
	"iter"
	"net"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	at "github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/tool"
)

// instant is an in-process Model whose turns cost nothing to produce:
// a tool call while the conversation has fewer than turns assistant
// messages, then a text answer. The events are built once.
type instant struct {
	turns    int
	toolTurn []llm.Event
	textTurn []llm.Event
}

func newInstant(turns int) *instant {
	return &instant{
		turns: turns,
		toolTurn: []llm.Event{
			llm.MessageStart{ID: "msg_1", Usage: llm.Usage{InputTokens: 100}},
			llm.TextDelta{Index: 0, Text: "Let me check."},
			llm.BlockStop{Index: 0},
			llm.ToolUseStart{Index: 1, ID: "toolu_X", Name: "echo", Input: []byte("{}")},
			llm.ToolInputDelta{Index: 1, PartialJSON: `{"text":`},
			llm.ToolInputDelta{Index: 1, PartialJSON: `"hello"}`},
			llm.BlockStop{Index: 1},
			llm.MessageDelta{StopReason: llm.ToolUseStop, Usage: llm.Usage{InputTokens: 100, OutputTokens: 20}},
			llm.MessageStop{},
		},
		textTurn: textTurn("Done.", llm.EndTurn),
	}
}

func (m *instant) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	n := 0
	for _, msg := range req.Messages {
		if msg.Role == llm.Assistant {
			n++
		}
	}
	evs := m.textTurn
	if n < m.turns-1 {
		evs = m.toolTurn
	}
	id := fmt.Sprintf("toolu_%d", n) // ids must be unique in a history
	return func(yield func(llm.Event, error) bool) {
		for _, ev := range evs {
			if s, ok := ev.(llm.ToolUseStart); ok {
				s.ID = id
				ev = s
			}
			if !yield(ev, nil) {
				return
			}
		}
	}
}

func echoRegistry(b *testing.B) *tool.Registry {
	type in struct {
		Text string `json:"text"`
	}
	echo, err := tool.New("echo", "Echo the text.", func(ctx context.Context, in in) (string, error) { return in.Text, nil })
	if err != nil {
		b.Fatal(err)
	}
	reg := tool.NewRegistry(tool.Config{})
	reg.Register(echo)
	return reg
}

// BenchmarkLoopOverhead measures what the loop itself costs per
// iteration: a 10-iteration run (9 tool turns and an answer) with a model
// and a tool that take no time, so what remains is event translation,
// assembly, the tool registry's goroutine, and the history's Repair,
// Messages and appends.
func BenchmarkLoopOverhead(b *testing.B) {
	const iters = 10
	model := newInstant(iters)
	reg := echoRegistry(b)
	b.ReportAllocs()
	for b.Loop() {
		a, err := New(Config{Model: model, Registry: reg})
		if err != nil {
			b.Fatal(err)
		}
		res, err := a.Run(context.Background(), "go")
		if err != nil || res.Iterations != iters {
			b.Fatalf("%+v, %v", res, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*iters), "ns/iteration")
}

// eagerTurn is a turn with three tool calls streamed over about 600 ms:
// each block takes ten events 20 ms apart.
func eagerTurn() *at.Stream {
	s := at.NewStream().Pace(20 * time.Millisecond)
	for i := 1; i <= 3; i++ {
		in := fmt.Sprintf(`{"n":%d,"pad":"abcdefghijklmnop"}`, i)
		s.ToolUse(fmt.Sprintf("toolu_%d", i), "work", at.Split(in, (len(in)+6)/7)...) // 7 fragments
		s.EndBlock()
	}
	return s.Pace(0).Stop("tool_use")
}

// workRegistry has a tool that takes 200 ms.
func workRegistry(b *testing.B, sequential bool) *tool.Registry {
	type in struct {
		N   int    `json:"n"`
		Pad string `json:"pad"`
	}
	work, err := tool.New("work", "Work for 200 ms.", func(ctx context.Context, in in) (string, error) {
		t := time.NewTimer(200 * time.Millisecond) // the tool's own work, not synchronisation
		defer t.Stop()
		select {
		case <-t.C:
			return "done", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	if sequential {
		work.Queue = "work" // alone in its queue
	}
	reg := tool.NewRegistry(tool.Config{})
	reg.Register(work)
	return reg
}

// wholeTurn streams one turn to its end, as a loop without eager tools
// does, and returns its tool calls.
func wholeTurn(b *testing.B, client *llm.Client) []llm.ToolUse {
	var asm llm.Assembler
	req := llm.Request{Model: llm.DefaultModel, Messages: []llm.Message{{Role: llm.User, Content: []llm.Block{llm.Text{Text: "go"}}}}}
	for ev, err := range client.Stream(b.Context(), req) {
		if err != nil {
			b.Fatal(err)
		}
		asm.Add(ev)
	}
	var calls []llm.ToolUse
	for _, blk := range asm.Turn().Message.Content {
		if tu, ok := blk.(llm.ToolUse); ok {
			calls = append(calls, tu)
		}
	}
	return calls
}

// BenchmarkEagerTools compares the wall time from the request to the last
// tool result for one turn whose three 200 ms tools stream over 600 ms:
// the agent, which starts each call at its block's stop, against waiting
// for the whole turn and then running the calls (concurrently, or one by
// one as the seed does).
func BenchmarkEagerTools(b *testing.B) {
	for _, sequential := range []bool{false, true} {
		reg := workRegistry(b, sequential)
		name := map[bool]string{false: "concurrent", true: "sequential"}[sequential]
		b.Run("eager/"+name, func(b *testing.B) {
			_, client := fake(b, at.Repeat(eagerTurn()))
			var total time.Duration
			for b.Loop() {
				a, _ := New(Config{Model: client, Registry: reg, MaxIterations: 1})
				start := time.Now()
				var last time.Duration
				for ev, err := range a.Stream(b.Context(), "go") {
					if err != nil {
						b.Fatal(err)
					}
					if r, ok := ev.(ToolDone); ok {
						if r.IsError {
							b.Fatalf("tool failed: %+v", r)
						}
						last = time.Since(start)
					}
				}
				total += last
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/turn")
		})
		b.Run("whole-turn/"+name, func(b *testing.B) {
			_, client := fake(b, at.Repeat(eagerTurn()))
			var total time.Duration
			for b.Loop() {
				start := time.Now()
				for _, r := range reg.Run(b.Context(), wholeTurn(b, client)) {
					if r.IsError {
						b.Fatalf("tool failed: %+v", r)
					}
				}
				total += time.Since(start)
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/turn")
		})
		b.Run("whole-turn-serial/"+name, func(b *testing.B) {
			if sequential {
				b.Skip("same as whole-turn/sequential")
			}
			_, client := fake(b, at.Repeat(eagerTurn()))
			var total time.Duration
			for b.Loop() {
				start := time.Now()
				for _, call := range wholeTurn(b, client) {
					if r := reg.Run(b.Context(), []llm.ToolUse{call})[0]; r.IsError {
						b.Fatalf("tool failed: %+v", r)
					}
				}
				total += time.Since(start)
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/turn")
		})
	}
}

// fiveTurns answers a conversation with a tool call until it has four
// assistant turns, then with text: a 5-iteration tool loop.
func fiveTurns() at.Reply {
	calls := make([]*at.Stream, 4)
	for i := range calls {
		calls[i] = at.NewStream().Text("Checking.").
			ToolUse(fmt.Sprintf("toolu_%d", i), "echo", `{"text":`, fmt.Sprintf(`"step %d"}`, i)).
			Stop("tool_use")
	}
	answer := at.NewStream().Text("All ", "done.").Stop("end_turn")
	return at.Repeat(at.ReplyFunc(func(r *at.Request) at.Reply {
		n := 0
		for _, m := range r.Messages() {
			if m.Role == "assistant" {
				n++
			}
		}
		if n < len(calls) {
			return calls[n]
		}
		return answer
	}))
}

// BenchmarkConcurrentAgents runs 1,000 agents at once, each a 5-iteration
// tool loop, against one fake server in the same process, over one
// llm.Client whose transport keeps enough idle connections per host to
// reuse them instead of exhausting ephemeral ports.
func BenchmarkConcurrentAgents(b *testing.B) {
	const agents = 1000
	srv := at.NewServer(fiveTurns())
	srv.Buffered = true
	defer srv.Close()
	var dials atomic.Int64
	dialer := &net.Dialer{}
	tr := &http.Transport{
		MaxIdleConnsPerHost: agents, MaxIdleConns: agents, IdleConnTimeout: time.Minute,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return dialer.DialContext(ctx, network, addr)
		},
	}
	defer tr.CloseIdleConnections()
	client := llm.New(llm.Config{BaseURL: srv.URL, APIKey: "test", HTTPClient: &http.Client{Transport: tr}})
	reg := echoRegistry(b)
	b.ReportAllocs()
	var errs atomic.Int64
	var wall time.Duration
	var perAgentHeap, perAgentAlloc, perAgentPeak float64
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		hs := make([]*memory.History, agents)
		peak := samplePeakHeap()
		start := time.Now()
		var wg sync.WaitGroup
		for i := range agents {
			hs[i] = memory.New(memory.Config{Model: llm.DefaultModel})
			a, err := New(Config{Model: client, Registry: reg, History: hs[i]})
			if err != nil {
				b.Fatal(err)
			}
			wg.Go(func() {
				res, err := a.Run(context.Background(), "go")
				if err != nil || res.State != Finished || res.Iterations != 5 || !strings.HasPrefix(res.Text, "All done") {
					if errs.Add(1) == 1 {
						b.Errorf("agent %d: %+v, %v", i, res, err)
					}
				}
			})
		}
		wg.Wait()
		wall = time.Since(start)
		perAgentPeak = float64(peak()-before.HeapAlloc) / agents
		runtime.ReadMemStats(&after)
		perAgentAlloc = float64(after.TotalAlloc-before.TotalAlloc) / agents
		runtime.GC()
		runtime.ReadMemStats(&after)
		perAgentHeap = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / agents
		runtime.KeepAlive(hs)
	}
	b.ReportMetric(float64(wall.Milliseconds()), "ms/1000agents")
	b.ReportMetric(perAgentAlloc, "alloc-B/agent")
	b.ReportMetric(perAgentHeap, "retained-B/agent")
	b.ReportMetric(perAgentPeak, "peak-heap-B/agent")
	b.ReportMetric(float64(dials.Load())/float64(b.N), "dials")
	b.ReportMetric(float64(errs.Load()), "errors")
}

// samplePeakHeap samples the live heap every millisecond until the
// returned function is called, which returns the largest sample.
func samplePeakHeap() (stop func() uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	done := make(chan struct{})
	result := make(chan uint64)
	go func() {
		var peak uint64
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-tick.C:
			case <-done:
				result <- peak
				return
			}
		}
	}()
	return func() uint64 { close(done); return <-result }
}
