package servertest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/agentloop/agentloop/agent"
	. "github.com/agentloop/agentloop/durable"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/tool"
)

// BenchmarkRoundTrip is one run of two turns and a tool call, in process
// and durable on the in-process server: the difference is the overhead of
// durability, per run and per turn (turns/op = 2).
func BenchmarkRoundTrip(b *testing.B) {
	b.Run("in-process", func(b *testing.B) {
		e := newEnv(b, conversational())
		add, _ := adder()
		model := llm.New(llm.Config{BaseURL: e.api.URL, MaxAttempts: 1})
		b.ResetTimer()
		for i := range b.N {
			a, err := agent.New(agent.Config{Model: model, Tools: []*tool.Tool{add}, History: memory.New(memory.Config{})})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := a.Run(context.Background(), fmt.Sprintf("run %d", i)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(2, "turns/op")
	})
	b.Run("durable", func(b *testing.B) {
		e := newEnv(b, conversational())
		add, _ := adder()
		e.worker(b, "bench", Config{}, add)
		b.ResetTimer()
		for i := range b.N {
			e.run(b, fmt.Sprintf("bench-%d", i), "bench", Input{Prompt: fmt.Sprintf("run %d", i)})
		}
		b.ReportMetric(2, "turns/op")
	})
}

// BenchmarkRunsPerSecond runs 20 round trips at once on 1 and 2 workers of
// one task queue.
func BenchmarkRunsPerSecond(b *testing.B) {
	const concurrent = 20
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			e := newEnv(b, conversational())
			for range workers {
				add, _ := adder()
				e.worker(b, "rps", Config{}, add)
			}
			b.ResetTimer()
			for i := range b.N {
				var wg sync.WaitGroup
				for j := range concurrent {
					wg.Go(func() {
						wr, err := e.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: fmt.Sprintf("rps-%d-%d", i, j), TaskQueue: "rps"},
							WorkflowName, Input{Prompt: fmt.Sprintf("run %d", j)})
						if err == nil {
							err = wr.Get(context.Background(), nil)
						}
						if err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
			}
			b.ReportMetric(float64(b.N*concurrent)/b.Elapsed().Seconds(), "runs/s")
		})
	}
}

// BenchmarkCodec encodes and decodes a 5 MiB history: JSON as Temporal's
// default converter sends it (over its 2 MB limit), compressed, and
// compressed with the blob store, for text that compresses as prose does
// and for text that does not.
func BenchmarkCodec(b *testing.B) {
	prose := strings.Repeat("The agent read the file, ran the tests and wrote a summary of what failed. ", 5<<20/76)
	for _, data := range []struct{ name, text string }{{"prose", prose}, {"random", incompressible(5 << 20)}} {
		history := []llm.Message{{Role: llm.User, Content: []llm.Block{llm.Text{Text: data.text}}}}
		for _, dc := range []struct {
			name string
			dc   converter.DataConverter
		}{
			{"json", converter.GetDefaultDataConverter()},
			{"zlib", DataConverter(nil)},
			{"zlib+blobs", DataConverter(DirStore(b.TempDir()))},
		} {
			b.Run(data.name+"/"+dc.name, func(b *testing.B) {
				var size int
				for range b.N {
					p, err := dc.dc.ToPayload(history)
					if err != nil {
						b.Fatal(err)
					}
					size = p.Size()
					var back []llm.Message
					if err := dc.dc.FromPayload(p, &back); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(size), "payload-bytes")
				b.SetBytes(int64(len(data.text)))
			})
		}
	}
}
