package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"go.temporal.io/server/temporaltest"

	"github.com/agentloop/agentloop/anthropictest"
)

// receiver is an OTLP/HTTP trace receiver on loopback that keeps the
// names and trace ids of the spans exported to it, by service.
type receiver struct {
	mu    sync.Mutex
	spans map[string][]span // by service.name
}

type span struct{ name, trace string }

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.URL.Path != "/v1/traces" {
		return // metrics: not looked at
	}
	req := &coltracepb.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(body, req); err != nil {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		service := ""
		for _, kv := range rs.Resource.Attributes {
			if kv.Key == "service.name" {
				service = kv.Value.GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				rc.spans[service] = append(rc.spans[service], span{s.Name, hex.EncodeToString(s.TraceId)})
			}
		}
	}
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// TestOTLPExport runs a worker and a prompt of the durable build, each
// exporting OTLP over HTTP from OTEL_* as the plain CLI does, to a loopback
// receiver that decodes the protobuf: the worker's chat and execute_tool
// spans are in the trace the client's start of the run began.
func TestOTLPExport(t *testing.T) {
	rc := &receiver{spans: map[string][]span{}}
	otlp := httptest.NewServer(rc)
	defer otlp.Close()
	api := anthropictest.NewServer(
		anthropictest.NewStream().ToolUse("toolu_1", "calculator", `{"expression":"6*7"}`).Stop("tool_use"),
		anthropictest.NewStream().Text("42.").Stop("end_turn"),
	)
	defer api.Close()
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	common := []string{"--temporal", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace(), "--task-queue", "otel"}
	env := func(service string) map[string]string {
		return map[string]string{"ANTHROPIC_BASE_URL": api.URL, "ANTHROPIC_API_KEY": "sk-ant-test", "OTEL_EXPORTER_OTLP_ENDPOINT": otlp.URL,
			"OTEL_METRICS_EXPORTER": "none", "OTEL_SERVICE_NAME": service}
	}

	ctx, cancel := context.WithCancel(context.Background())
	workerDone := make(chan int, 1)
	var workerOut bytes.Buffer
	go func() {
		var stdout bytes.Buffer
		workerDone <- command(ctx, env("worker"), &stdout, &workerOut, append(append([]string{"worker"}, common...), "--tools", "calculator")...)
	}()
	var stdout, stderr bytes.Buffer
	if code := command(context.Background(), env("client"), &stdout, &stderr, append(common, "what is 6*7?")...); code != exitOK {
		t.Fatalf("prompt: exit %d; stderr:\n%s", code, stderr.String())
	}
	cancel() // the worker flushes its spans as it stops
	if code := <-workerDone; code != exitOK {
		t.Fatalf("worker: exit %d:\n%s", code, workerOut.String())
	}

	rc.mu.Lock()
	defer rc.mu.Unlock()
	var trace string
	for _, s := range rc.spans["client"] {
		if strings.HasPrefix(s.name, "StartWorkflow:") {
			trace = s.trace
		}
	}
	if trace == "" {
		t.Fatalf("the client exported no StartWorkflow span: %v", rc.spans["client"])
	}
	var names []string
	for _, s := range rc.spans["worker"] {
		if s.trace == trace {
			names = append(names, s.name)
		}
	}
	for _, want := range []string{"chat ", "execute_tool calculator", "RunWorkflow:agentloop.Run", "RunActivity:agentloop.CallTool"} {
		if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, want) }) {
			t.Errorf("the worker exported no %q span in the client's trace; it exported %v", want, names)
		}
	}
}
