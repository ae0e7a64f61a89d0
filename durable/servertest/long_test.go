package servertest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/anthropictest"
	. "github.com/agentloop/agentloop/durable"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/tool"
)

type blobIn struct {
	Data string `json:"data"`
}

// incompressible returns n bytes of base64 of random bytes from a fixed
// seed: too large for Temporal's 2 MB limit even after compression.
func incompressible(n int) string {
	r := rand.NewChaCha8([32]byte{1})
	raw := make([]byte, n*3/4)
	r.Read(raw)
	return base64.StdEncoding.EncodeToString(raw)[:n]
}

// TestLargePayloads runs a 5 MiB tool input through the model turn, the
// tool call and the history, with a client and worker that share a blob
// store, as workers on one file system do.
func TestLargePayloads(t *testing.T) {
	data := incompressible(5 << 20)
	input := `{"data":"` + data + `"}`
	e := newEnv(t,
		anthropictest.NewStream().ToolUse("toolu_1", "digest", anthropictest.Split(input, 256<<10)...).Stop("tool_use"),
		anthropictest.NewStream().Text("Digested.").Stop("end_turn"),
	)
	digest := tool.Must(tool.New("digest", "digests data", func(ctx context.Context, in blobIn) (string, error) {
		return fmt.Sprintf("%d bytes, sha256 %x", len(in.Data), sha256.Sum256([]byte(in.Data))), nil
	}))
	e.worker(t, "large", Config{}, digest)
	res := e.run(t, "large", "large", Input{Prompt: "digest this"})

	want := fmt.Sprintf("%d bytes, sha256 %x", len(data), sha256.Sum256([]byte(data)))
	results := e.api.Requests()[1].ToolResults()
	if len(results) != 1 || results[0].Content[0].Text != want {
		t.Fatalf("tool result = %+v, want %q", results, want)
	}
	if len(res.History) != 4 || string(res.History[1].Content[0].(llm.ToolUse).Input) != input {
		t.Errorf("the result's history does not hold the 5 MiB input")
	}
	blobs, err := os.ReadDir(string(e.store))
	if err != nil || len(blobs) == 0 {
		t.Errorf("blob store holds %d files (err %v), want the large payloads", len(blobs), err)
	}
	e.checkRequests(t)
}

// script is a conversation of n tool turns and a final answer, its tool
// calls numbered from first: ids are unique in a conversation, or Repair
// drops the later call, and the turn left without it is a prefill.
func script(first, n int) []anthropictest.Reply {
	var rs []anthropictest.Reply
	for i := range n {
		rs = append(rs, anthropictest.NewStream().Text(fmt.Sprintf("Step %d.", i)).
			ToolUse(fmt.Sprintf("toolu_%d", first+i), "add", fmt.Sprintf(`{"a":%d,"b":1}`, i)).Usage(10*(i+1), 5, 0, 0).Stop("tool_use"))
	}
	return append(rs, anthropictest.NewStream().Text("All added.").Usage(10*(n+1), 3, 0, 0).Stop("end_turn"))
}

// TestContinueAsNew runs a conversation over several workflow runs and
// checks that it ends exactly as the in-process loop ends it: the same
// result and the same history, after a second prompt too.
func TestContinueAsNew(t *testing.T) {
	const turns = 5
	e := newEnv(t, script(0, turns)...)
	add, _ := adder()
	e.worker(t, "can", Config{}, add)
	res := e.run(t, "can", "can", Input{Prompt: "add", TurnsPerRun: 2})
	if res.Runs != 3 {
		t.Errorf("runs = %d, want 3 (continue-as-new after every 2 turns)", res.Runs)
	}
	e.api.Enqueue(script(turns, 1)...)
	res2 := e.run(t, "can-2", "can", Input{Prompt: "again", History: res.History, TurnsPerRun: 2})

	// The same conversation, in process.
	api := anthropictest.NewServer(append(script(0, turns), script(turns, 1)...)...)
	defer api.Close()
	add2, _ := adder()
	hist := memory.New(memory.Config{})
	a, err := agent.New(agent.Config{Model: llm.New(llm.Config{BaseURL: api.URL}), Tools: []*tool.Tool{add2}, History: hist})
	if err != nil {
		t.Fatal(err)
	}
	want, err := a.Run(context.Background(), "add")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, res.Result); diff != "" {
		t.Errorf("durable result differs from in-process (-in-process +durable):\n%s", diff)
	}
	want2, err := a.Run(context.Background(), "again")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want2, res2.Result); diff != "" {
		t.Errorf("second result differs from in-process (-in-process +durable):\n%s", diff)
	}
	if diff := cmp.Diff(hist.Messages(), res2.History); diff != "" {
		t.Errorf("history differs from in-process (-in-process +durable):\n%s", diff)
	}
	e.checkRequests(t)
}

// TestContinueAsNewKeepsTokenCounts runs a conversation whose last turn
// reports a context over the limit, one turn per workflow run: the exact
// count that the API reported crosses the continue-as-new, so the durable
// run compacts before the next request exactly as the in-process loop
// does, where an estimate of the short messages would not compact at all.
func TestContinueAsNewKeepsTokenCounts(t *testing.T) {
	replies := func() []anthropictest.Reply {
		rs := script(0, 6)
		rs[5] = anthropictest.NewStream().ToolUse("toolu_5", "add", `{"a":5,"b":1}`).Usage(90_000, 5, 0, 0).Stop("tool_use")
		return rs
	}
	const limit = 50_000
	e := newEnv(t, replies()...)
	add, _ := adder()
	e.worker(t, "tokens", Config{}, add)
	e.run(t, "tokens", "tokens", Input{Prompt: "add", TurnsPerRun: 1, ContextLimit: limit})

	api := anthropictest.NewServer(replies()...)
	defer api.Close()
	add2, _ := adder()
	a, err := agent.New(agent.Config{Model: llm.New(llm.Config{BaseURL: api.URL}), Tools: []*tool.Tool{add2},
		History: memory.New(memory.Config{ContextLimit: limit})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), "add"); err != nil {
		t.Fatal(err)
	}
	var want, got [][]anthropictest.Message
	for _, r := range api.Requests() {
		want = append(want, r.Messages())
	}
	for _, r := range e.api.Requests() {
		got = append(got, r.Messages())
	}
	// Compaction cleared the first tool result.
	n := len(want)
	if diff := cmp.Diff(want[n-1][2], want[n-2][2]); diff == "" {
		t.Fatal("the in-process loop did not compact: the test proves nothing")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests differ from in-process (-in-process +durable):\n%s", diff)
	}
	e.checkRequests(t)
}

// TestOversizedResult: without a blob store, a tool result (an image) too
// large for Temporal reaches the model as an is_error result saying so; the tool
// runs once, and the run goes on.
func TestOversizedResult(t *testing.T) {
	data := incompressible(3 << 20)
	e := newEnv(t,
		anthropictest.NewStream().ToolUse("toolu_1", "dump", `{}`).Stop("tool_use"),
		anthropictest.NewStream().Text("Too big.").Stop("end_turn"),
	)
	var runs atomic.Int32
	// An image, which the registry's cap on text does not shorten.
	dump := tool.Must(tool.New("dump", "dumps data", func(ctx context.Context, _ none) (llm.Block, error) {
		runs.Add(1)
		return llm.Image{MediaType: "image/png", Data: data}, nil
	}))
	e.worker(t, "oversized", Config{}, dump) // no BlobStore: as the CLI without --blobs
	res := e.run(t, "oversized", "oversized", Input{Prompt: "dump"})
	if n := runs.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want once", n)
	}
	results := e.api.Requests()[1].ToolResults()
	if len(results) != 1 || !results[0].IsError || !strings.Contains(results[0].Content[0].Text, "without a blob store") {
		t.Errorf("tool result = %+v, want an is_error result about the payload limit", results)
	}
	if res.Text != "Too big." {
		t.Errorf("text = %q", res.Text)
	}
	e.checkRequests(t)
}

// TestBudgetAcrossContinueAsNew spends $1 a turn, one turn per workflow
// run, under a budget of $2.50: each run takes what the runs before it
// spent off its budget, so the third turn's spending ends the conversation
// as it ends in process, before a fourth request.
func TestBudgetAcrossContinueAsNew(t *testing.T) {
	replies := func() []anthropictest.Reply {
		var rs []anthropictest.Reply
		for i := range 5 {
			rs = append(rs, anthropictest.NewStream().ToolUse(fmt.Sprintf("toolu_%d", i), "add", fmt.Sprintf(`{"a":%d,"b":1}`, i)).
				Usage(500_000, 5, 0, 0).Stop("tool_use")) // $1 at the default model's price
		}
		return rs
	}
	e := newEnv(t, replies()...)
	add, _ := adder()
	e.worker(t, "budget", Config{}, add)
	res := e.run(t, "budget", "budget", Input{Prompt: "add", TurnsPerRun: 1, MaxCostUSD: 2.5})

	api := anthropictest.NewServer(replies()...)
	defer api.Close()
	add2, _ := adder()
	a, err := agent.New(agent.Config{Model: llm.New(llm.Config{BaseURL: api.URL}), Tools: []*tool.Tool{add2}, MaxCostUSD: 2.5})
	if err != nil {
		t.Fatal(err)
	}
	want, err := a.Run(context.Background(), "add")
	if err != nil {
		t.Fatal(err)
	}
	if want.State != agent.BudgetLimit || want.Iterations != 3 {
		t.Fatalf("in process: %+v; want the budget limit after 3 turns", want)
	}
	if diff := cmp.Diff(want, res.Result, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("durable result differs from in-process (-in-process +durable):\n%s", diff)
	}
	if n := len(e.api.Requests()); n != 3 || res.Runs != 3 {
		t.Errorf("%d requests in %d workflow runs, want 3 in 3", n, res.Runs)
	}
	e.checkRequests(t)
}
