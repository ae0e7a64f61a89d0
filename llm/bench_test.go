package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/internal/testenv"
	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
)

// The benchmarks run our Stream and the SDK's NewStreaming over the same
// bytes, served from memory by one http.RoundTripper, so that both pay
// the same request building and neither pays the network.
//
//	go test ./llm -run '^$' -bench . -benchtime 2s
//
// Each reports ns/event, allocs/event and B/event, where an event is one
// SSE event of the stream, and our Stream reports its speed-up over
// NewStreaming+AsAny as x-vs-sdk.

// memTransport answers every request with body as a 200 event stream,
// all of it there at once, or with keepUp read at most 1 KiB at a time, as
// from a network, so that our decoder is never behind the stream and
// passes on every delta, as the SDK does (see sseReader.split).
type memTransport struct {
	body   []byte
	keepUp bool
}

// readsOf hands out at most n bytes a Read.
type readsOf struct {
	r io.Reader
	n int
}

func (r readsOf) Read(p []byte) (int, error) { return r.r.Read(p[:min(len(p), r.n)]) }

func (m memTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	var body io.Reader = bytes.NewReader(m.body)
	if m.keepUp {
		body = readsOf{body, 1 << 10}
	}
	return &http.Response{
		StatusCode: 200, Request: r, ContentLength: -1,
		Header: http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}},
		Body:   io.NopCloser(body),
	}, nil
}

type benchStream struct {
	name string
	body []byte
}

func benchStreams(b *testing.B) []benchStream {
	text := func(n int) []byte {
		d := make([]string, n)
		for i := range d {
			d[i] = "word "
		}
		return anthropictest.NewStream().Text(d...).Stop("end_turn").Bytes()
	}
	// A 5 MiB JSON input with escapes, in 10k fragments cut anywhere.
	var in strings.Builder
	in.WriteString(`{"content":"`)
	for in.Len() < 5<<20 {
		in.WriteString(`line with \"quotes\" and a tab\t and é\n`)
	}
	in.WriteString(`"}`)
	tool := anthropictest.NewStream().ToolUse("toolu_1", "write", anthropictest.Split(in.String(), in.Len()/10_000+1)...).
		Stop("tool_use").Bytes()
	s := []benchStream{
		{"text10k", text(10_000)},
		{"text100k", text(100_000)},
		{"tool5MiB", tool},
	}
	if dir, ok := testenv.FindFixtures(); ok {
		for _, f := range []string{"pyd_pause_turn_web_search_real.sse", "pyd_thinking_then_web_search_citations_real.sse"} {
			s = append(s, benchStream{"real_" + strings.TrimSuffix(strings.TrimSuffix(f, ".sse"), "_real"), readFixture(b, dir, filepath.Base(f))})
		}
	} else {
		b.Log("shared fixtures absent: real-stream benchmarks skipped")
	}
	return s
}

func countEvents(body []byte) int { return bytes.Count(body, []byte("event: ")) }

// measure runs f b.N times and reports per-event metrics. It returns
// ns/event.
func measure(b *testing.B, events int, f func()) float64 {
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for b.Loop() {
		f()
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	n := float64(b.N) * float64(events)
	ns := float64(b.Elapsed().Nanoseconds()) / n
	b.ReportMetric(ns, "ns/event")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/event")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/event")
	return ns
}

var benchReq = Request{Model: "m", Messages: []Message{{Role: User, Content: []Block{Text{Text: "hi"}}}}}

func BenchmarkStream(b *testing.B) {
	for _, s := range benchStreams(b) {
		events := countEvents(s.body)
		hc := &http.Client{Transport: memTransport{body: s.body}}
		sdk := anthropic.NewClient(option.WithoutEnvironmentDefaults(), option.WithHTTPClient(hc), option.WithMaxRetries(0), option.WithAPIKey("k"))
		ours := New(Config{HTTPClient: hc, APIKey: "k"})
		params := anthropic.MessageNewParams{Model: "m", MaxTokens: 1, Messages: []anthropic.MessageParam{
			anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}
		ctx := context.Background()
		var sdkNs float64

		b.Run(s.name+"/sdk-asany", func(b *testing.B) {
			sdkNs = measure(b, events, func() {
				st := sdk.Messages.NewStreaming(ctx, params)
				for st.Next() {
					_ = st.Current().AsAny()
				}
				if err := st.Err(); err != nil {
					b.Fatal(err)
				}
			})
		})
		b.Run(s.name+"/sdk-accumulate", func(b *testing.B) {
			measure(b, events, func() {
				st := sdk.Messages.NewStreaming(ctx, params)
				var m anthropic.Message
				for st.Next() {
					if err := m.Accumulate(st.Current()); err != nil {
						b.Fatal(err)
					}
				}
				if err := st.Err(); err != nil {
					b.Fatal(err)
				}
			})
		})
		run := func(assemble bool) func(b *testing.B) {
			return func(b *testing.B) {
				ns := measure(b, events, func() {
					var a Assembler
					for ev, err := range ours.Stream(ctx, benchReq) {
						if err != nil {
							b.Fatal(err)
						}
						if assemble {
							a.Add(ev)
						}
					}
				})
				if sdkNs > 0 {
					b.ReportMetric(sdkNs/ns, "x-vs-sdk")
				}
			}
		}
		b.Run(s.name+"/ours", run(false))
		b.Run(s.name+"/ours+assemble", run(true))
		// The stream all there, our decoder is behind it and joins its text
		// deltas (as for a caller that fell behind); read as it arrives from
		// a network, it passes each on.
		ours = New(Config{HTTPClient: &http.Client{Transport: memTransport{body: s.body, keepUp: true}}, APIKey: "k"})
		b.Run(s.name+"/ours-keeping-up", run(false))
	}
}

// BenchmarkRequestBody writes the body of the request that sends a 5 MiB
// tool input back, as the turn after a file-writing tool call does: ours,
// and the SDK's MessageNewParams given the same message as its own JSON
// (param.Override, as this package did before) or built from its own
// types, each then marshalled by the SDK as Messages.New would.
//
//	go test ./llm -run '^$' -bench RequestBody -benchmem
func BenchmarkRequestBody(b *testing.B) {
	var in strings.Builder
	in.WriteString(`{"path":"out.txt","content":"`)
	for in.Len() < 5<<20 {
		in.WriteString(`line with \"quotes\" and a tab\t and é\n`)
	}
	in.WriteString(`"}`)
	input := json.RawMessage(in.String())
	req := Request{Model: "m", Messages: []Message{
		{Role: User, Content: []Block{Text{Text: "Write the file."}}},
		{Role: Assistant, Content: []Block{ToolUse{ID: "toolu_1", Name: "write", Input: input}}},
		{Role: User, Content: []Block{ToolResult{ToolUseID: "toolu_1", Content: []Block{Text{Text: "written"}}}}},
	}}
	b.Run("ours", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := requestBody(req, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sdk-params-override", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var msgs []anthropic.MessageParam
			for _, m := range req.Messages {
				raw, err := json.Marshal(m)
				if err != nil {
					b.Fatal(err)
				}
				msgs = append(msgs, param.Override[anthropic.MessageParam](json.RawMessage(raw)))
			}
			p := anthropic.MessageNewParams{Model: "m", MaxTokens: DefaultMaxTokens, Messages: msgs}
			if _, err := p.MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sdk-params", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p := anthropic.MessageNewParams{Model: "m", MaxTokens: DefaultMaxTokens, Messages: []anthropic.MessageParam{
				anthropic.NewUserMessage(anthropic.NewTextBlock("Write the file.")),
				anthropic.NewAssistantMessage(anthropic.NewToolUseBlock("toolu_1", input, "write")),
				anthropic.NewUserMessage(anthropic.NewToolResultBlock("toolu_1", "written", false)),
			}}
			if _, err := p.MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkUnmarshalBigBlock decodes a whole 5 MiB tool_use block, as a
// block start or a saved message may hold one: ours, and encoding/json
// into the same block, the floor it was before.
//
//	go test ./llm -run '^$' -bench UnmarshalBigBlock -benchmem
func BenchmarkUnmarshalBigBlock(b *testing.B) {
	data, _ := json.Marshal(map[string]any{"type": "tool_use", "id": "toolu_1", "name": "write",
		"input": map[string]any{"content": strings.Repeat("\tfmt.Println(\"héllo\")\n", 5<<20/24)}})
	b.Run("ours", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := unmarshalBlock(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var head struct{ Type string }
			var tu ToolUse
			if json.Unmarshal(data, &head) != nil || json.Unmarshal(data, &tu) != nil {
				b.Fatal("decoding failed")
			}
		}
	})
}
