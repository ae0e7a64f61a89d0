package anthropictest

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
)

// deltas100k is the 100k-delta text the llm package streams in its
// benchmarks.
var deltas100k = func() []string {
	d := make([]string, 100_000)
	for i := range d {
		d[i] = "tok "
	}
	return d
}()

// BenchmarkRender measures turning a 100k-delta script into wire bytes,
// which happens once per Stream.
func BenchmarkRender100k(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		s := NewStream().Text(deltas100k...).Stop("end_turn")
		b.SetBytes(int64(len(s.compile().body)))
	}
}

// BenchmarkServe100k measures serving one rendered 100k-delta stream to a
// client that discards it: flushed per event (the default, what the API
// does) and Buffered (for client benchmarks).
func BenchmarkServe100k(b *testing.B) {
	for _, buffered := range []bool{false, true} {
		name := "flushed"
		s := NewStream().Text(deltas100k...).Stop("end_turn")
		if buffered {
			name = "buffered"
		}
		b.Run(name, func(b *testing.B) {
			srv := NewServer(Repeat(s))
			srv.Buffered = buffered
			defer srv.Close()
			client := newClient(&testing.T{})
			b.SetBytes(int64(len(s.compile().body)))
			b.ReportAllocs()
			for b.Loop() {
				resp, err := tryPost(context.Background(), client, srv.URL)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

// BenchmarkCheckRequest measures checking a 101-message tool conversation.
func BenchmarkCheckRequest(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"model":"m","max_tokens":1024,"messages":[{"role":"user","content":"go"}`)
	for i := range 50 {
		fmt.Fprintf(&sb, `,{"role":"assistant","content":[{"type":"text","text":"step %d"},{"type":"tool_use","id":"toolu_%d","name":"f","input":{"i":%d}}]}`, i, i, i)
		fmt.Fprintf(&sb, `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":"ok"}]}`, i)
	}
	sb.WriteString(`]}`)
	body := []byte(sb.String())
	if err := CheckRequest(body); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		CheckRequest(body)
	}
}
