package servertest

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/anthropictest"
	. "github.com/agentloop/agentloop/durable"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// env is a real Temporal server in the test process, a fake Anthropic API
// on loopback, and a client that speaks to the server with the durable
// data converter.
type env struct {
	ts    *temporaltest.TestServer
	c     client.Client
	api   *anthropictest.Server
	store DirStore
	// opts are the options of the workers the test starts.
	opts worker.Options
}

func newEnv(t testing.TB, replies ...anthropictest.Reply) *env {
	t.Helper()
	store := DirStore(t.TempDir())
	tt, _ := t.(*testing.T)
	opts := []temporaltest.TestServerOption{temporaltest.WithBaseClientOptions(client.Options{DataConverter: DataConverter(store)})}
	if tt != nil {
		opts = append(opts, temporaltest.WithT(tt))
	}
	ts := temporaltest.NewServer(opts...)
	if tt == nil {
		t.Cleanup(ts.Stop)
	}
	api := anthropictest.NewServer(replies...)
	t.Cleanup(api.Close)
	return &env{ts: ts, c: ts.GetDefaultClient(), api: api, store: store, opts: testWorkerOptions()}
}

// testWorkerOptions are the options of the tests' workers. The SDK's
// deadlock detector fails a workflow task that runs for a second without
// yielding: on a loaded machine under the race detector, a live one can
// (decoding 5 MiB in TestLargePayloads, fifty runs at once in
// TestTwoWorkersManyRuns). A real deadlock still fails, later.
func testWorkerOptions() worker.Options {
	return worker.Options{DeadlockDetectionTimeout: 30 * time.Second}
}

// worker starts a worker on queue with the given tools, streaming from the
// fake API.
func (e *env) worker(t testing.TB, queue string, cfg Config, tools ...*tool.Tool) worker.Worker {
	t.Helper()
	if cfg.Model == nil {
		cfg.Model = llm.New(llm.Config{BaseURL: e.api.URL, MaxAttempts: 1})
	}
	if cfg.Registry == nil {
		cfg.Registry = tool.NewRegistry(tool.Config{})
	}
	if err := cfg.Registry.Register(tools...); err != nil {
		t.Fatal(err)
	}
	var regErr error
	w := e.ts.NewWorkerWithOptions(queue, func(r worker.Registry) { regErr = Register(r, cfg) }, e.opts)
	if regErr != nil {
		t.Fatal(regErr)
	}
	return w
}

// run starts a run on queue and waits for its result.
func (e *env) run(t testing.TB, id, queue string, in Input) Result {
	t.Helper()
	wr, err := e.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: queue}, WorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	var res Result
	if err := wr.Get(context.Background(), &res); err != nil {
		t.Fatalf("run %s: %v", id, err)
	}
	return res
}

// checkRequests fails t for every request the real API would refuse.
func (e *env) checkRequests(t testing.TB) {
	t.Helper()
	for _, r := range e.api.Requests() {
		if err := anthropictest.CheckRequest(r.Body); err != nil {
			t.Errorf("request %d: %v", r.N, err)
		}
	}
}

type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

// adder returns an add tool and the count of its calls.
func adder() (*tool.Tool, *atomic.Int32) {
	var n atomic.Int32
	return tool.Must(tool.New("add", "adds two numbers", func(ctx context.Context, in addIn) (int, error) {
		n.Add(1)
		return in.A + in.B, nil
	})), &n
}

func TestToolRoundTrip(t *testing.T) {
	e := newEnv(t,
		anthropictest.NewStream().Text("Adding.").ToolUse("toolu_1", "add", `{"a":1,`, `"b":2}`).Stop("tool_use"),
		anthropictest.NewStream().Text("It is ", "3.").Stop("end_turn"),
	)
	add, calls := adder()
	e.worker(t, "q", Config{}, add)
	res := e.run(t, "round-trip", "q", Input{Prompt: "What is 1+2?"})

	if res.State != agent.Finished || res.Text != "It is 3." || res.Iterations != 2 || res.Runs != 1 {
		t.Errorf("result = %+v, want finished, %q, 2 iterations, 1 run", res.Result, "It is 3.")
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("add ran %d times, want 1", n)
	}
	want := []llm.Message{
		{Role: llm.User, Content: []llm.Block{llm.Text{Text: "What is 1+2?"}}},
		{Role: llm.Assistant, Content: []llm.Block{llm.Text{Text: "Adding."}, llm.ToolUse{ID: "toolu_1", Name: "add", Input: json.RawMessage(`{"a":1,"b":2}`)}}},
		{Role: llm.User, Content: []llm.Block{llm.ToolResult{ToolUseID: "toolu_1", Content: []llm.Block{llm.Text{Text: "3"}}}}},
		{Role: llm.Assistant, Content: []llm.Block{llm.Text{Text: "It is 3."}}},
	}
	if diff := cmp.Diff(want, res.History); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if got := len(e.api.Requests()); got != 2 {
		t.Errorf("%d model requests, want 2", got)
	}
	e.checkRequests(t)
}
