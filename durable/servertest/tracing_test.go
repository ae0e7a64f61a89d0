package servertest

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"

	"github.com/agentloop/agentloop/anthropictest"
	. "github.com/agentloop/agentloop/durable"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/telemetry"
	"github.com/agentloop/agentloop/tool"
)

// TestTracing runs a tool round trip on a real server with the tracing
// interceptor on the caller's client and on the worker: the run's chat and
// execute_tool spans are in the caller's trace, under the spans of the
// workflow and its activities, down from the caller's own span.
func TestTracing(t *testing.T) {
	e := newEnv(t,
		anthropictest.NewStream().ToolUse("toolu_1", "add", `{"a":1,"b":2}`).Stop("tool_use"),
		anthropictest.NewStream().Text("3.").Stop("end_turn"),
	)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	tracing, err := Tracing(tp)
	if err != nil {
		t.Fatal(err)
	}
	// One client for the caller and the worker, as in one process: the
	// worker inherits its interceptor, and its activities' signals carry
	// the trace too.
	c, err := client.Dial(client.Options{HostPort: e.ts.GetFrontendHostPort(), Namespace: e.ts.GetDefaultNamespace(),
		DataConverter: DataConverter(e.store), Interceptors: []interceptor.ClientInterceptor{tracing}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	add, _ := adder()
	reg := tool.NewRegistry(tool.Config{})
	if err := reg.Register(add); err != nil {
		t.Fatal(err)
	}
	tel := telemetry.Config{TracerProvider: tp}
	w := worker.New(c, "traced", worker.Options{})
	api := llm.New(llm.Config{BaseURL: e.api.URL, Observe: telemetry.New(tel).Observe(e.api.URL)})
	if err := Register(w, Config{Model: api, Registry: reg, Telemetry: tel}); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	ctx, caller := tp.Tracer("test").Start(context.Background(), "caller")
	wr, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "traced", TaskQueue: "traced"}, WorkflowName, Input{Prompt: "add"})
	if err != nil {
		t.Fatal(err)
	}
	if err := wr.Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	caller.End()

	spans := rec.Ended()
	byID := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID().String()] = s
	}
	// chain returns the names from the caller's span down to s.
	chain := func(s sdktrace.ReadOnlySpan) []string {
		var names []string
		for s != nil {
			names = append(names, s.Name())
			s = byID[s.Parent().SpanID().String()]
		}
		slices.Reverse(names)
		return names
	}
	var got [][]string
	for _, s := range spans {
		if s.SpanContext().TraceID() != caller.SpanContext().TraceID() {
			t.Errorf("span %q is in trace %s, not the caller's", s.Name(), s.SpanContext().TraceID())
		}
		if strings.HasPrefix(s.Name(), "chat ") || strings.HasPrefix(s.Name(), "execute_tool ") {
			got = append(got, chain(s))
		}
	}
	run := []string{"caller", "StartWorkflow:" + WorkflowName, "RunWorkflow:" + WorkflowName}
	model := append(slices.Clone(run), "StartActivity:"+"agentloop.ModelTurn", "RunActivity:"+"agentloop.ModelTurn", "chat "+llm.DefaultModel)
	want := [][]string{model, append(slices.Clone(run), "StartActivity:"+"agentloop.CallTool", "RunActivity:"+"agentloop.CallTool", "execute_tool add"), model}
	sortChains := func(cs [][]string) { slices.SortFunc(cs, func(a, b []string) int { return slices.Compare(a, b) }) }
	sortChains(got)
	sortChains(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("span chains (-want +got):\n%s", diff)
	}
}
