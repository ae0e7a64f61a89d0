package tool

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/llm"
)

type benchInput struct {
	A float64 `json:"a" jsonschema:"the first addend"`
	B float64 `json:"b" jsonschema:"the second addend"`
}

func benchAdd(ctx context.Context, in benchInput) (float64, error) { return in.A + in.B, nil }

var benchCall = llm.ToolUse{ID: "toolu_1", Name: "add", Input: json.RawMessage(`{"a": 3, "b": 5}`)}

// BenchmarkDirect is the baseline: decoding the input and calling the
// function by hand, as a loop without a registry would.
func BenchmarkDirect(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		var in benchInput
		if err := json.Unmarshal(benchCall.Input, &in); err != nil {
			b.Fatal(err)
		}
		if _, err := benchAdd(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPrepare measures input checking alone: JSON parse and schema
// validation.
func BenchmarkPrepare(b *testing.B) {
	t := Must(New("add", "Add.", benchAdd))
	for b.Loop() {
		if _, err := prepare(t, benchCall.Input); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDispatch is the whole path of one call through Run: lookup,
// validation, decoding, the goroutines, the timeout, result shaping.
func BenchmarkDispatch(b *testing.B) {
	r := NewRegistry(Config{})
	if err := r.Register(Must(New("add", "Add.", benchAdd))); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	calls := []llm.ToolUse{benchCall}
	for b.Loop() {
		if res := r.Run(ctx, calls); res[0].IsError {
			b.Fatal(res)
		}
	}
}

// BenchmarkDispatch8 runs 8 trivial calls per Run; ns/op is for all 8.
func BenchmarkDispatch8(b *testing.B) {
	r := NewRegistry(Config{})
	if err := r.Register(Must(New("add", "Add.", benchAdd))); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	calls := make([]llm.ToolUse, 8)
	for i := range calls {
		calls[i] = benchCall
	}
	for b.Loop() {
		r.Run(ctx, calls)
	}
}

// benchSleep runs 8 calls that each take 200 ms and reports the wall time
// of the batch.
func benchSleep(b *testing.B, sequential bool) {
	sleep := Must(New("sleep", "Work for 200 ms.", func(ctx context.Context, in struct{}) (string, error) {
		select {
		case <-time.After(200 * time.Millisecond): // simulated work
			return "done", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}))
	if sequential {
		sleep.Queue = "sleep"
	}
	r := NewRegistry(Config{})
	if err := r.Register(sleep); err != nil {
		b.Fatal(err)
	}
	calls := make([]llm.ToolUse, 8)
	for i := range calls {
		calls[i] = llm.ToolUse{ID: "toolu", Name: "sleep", Input: json.RawMessage(`{}`)}
	}
	ctx := context.Background()
	start := time.Now()
	for b.Loop() {
		for _, res := range r.Run(ctx, calls) {
			if res.IsError {
				b.Fatal(res)
			}
		}
	}
	b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "wall-ms/op")
}

func BenchmarkEightCallsOf200ms(b *testing.B)           { benchSleep(b, false) }
func BenchmarkEightCallsOf200msSequential(b *testing.B) { benchSleep(b, true) }

// writeInput is the input of a file-writing tool, the big-payload case: a
// model writes a whole file as one 5 MiB string.
type writeInput struct {
	Path    string `json:"path" jsonschema:"the file to write"`
	Content string `json:"content" jsonschema:"the whole new content"`
}

func benchWrite(ctx context.Context, in writeInput) (string, error) { return "wrote " + in.Path, nil }

// bigCall is a call of write with 5 MiB of JSON-escaped text: newlines,
// quotes and some non-ASCII, as source code has.
var bigCall = func() llm.ToolUse {
	line := `	fmt.Println("héllo, wörld") // a line of code` + "\n"
	content := strings.Repeat(line, 5<<20/len(line))
	input, _ := json.Marshal(writeInput{Path: "main.go", Content: content})
	return llm.ToolUse{ID: "toolu_1", Name: "write", Input: input}
}()

// BenchmarkBigDirect is the floor for the 5 MiB input: decoding it into
// the tool's struct by hand, which any tool must do.
func BenchmarkBigDirect(b *testing.B) {
	b.SetBytes(int64(len(bigCall.Input)))
	for b.Loop() {
		var in writeInput
		if err := json.Unmarshal(bigCall.Input, &in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBigPrepare is input checking alone (parse and validate) for the
// 5 MiB input.
func BenchmarkBigPrepare(b *testing.B) {
	t := Must(New("write", "Write a file.", benchWrite))
	b.SetBytes(int64(len(bigCall.Input)))
	for b.Loop() {
		if _, err := prepare(t, bigCall.Input); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBigDispatch is the 5 MiB call through Run: validation, the
// typed decode and the call.
func BenchmarkBigDispatch(b *testing.B) {
	r := NewRegistry(Config{})
	if err := r.Register(Must(New("write", "Write a file.", benchWrite))); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	calls := []llm.ToolUse{bigCall}
	b.SetBytes(int64(len(bigCall.Input)))
	for b.Loop() {
		if res := r.Run(ctx, calls); res[0].IsError {
			b.Fatal(res)
		}
	}
}

// manyStrings is a call of 10,000 short strings to a tool whose schema
// reads one of its fields (an enum), so prepare unquotes some strings.
var manyStrings = struct {
	schema json.RawMessage
	input  json.RawMessage
}{
	json.RawMessage(`{"type":"object","properties":{"op":{"enum":["add","sub"]},"lines":{"type":"array","items":{"type":"string"}}}}`),
	json.RawMessage(`{"op":"add","lines":[` + strings.Repeat(`"some line of text",`, 10_000) + `"end"]}`),
}

// BenchmarkManyStringsDirect is the floor for manyStrings: decoding it as
// encoding/json does into Go values.
func BenchmarkManyStringsDirect(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var v any
		if err := json.Unmarshal(manyStrings.input, &v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkManyStringsPrepare is input checking alone for manyStrings.
func BenchmarkManyStringsPrepare(b *testing.B) {
	t, err := NewRaw("lines", "Take lines.", manyStrings.schema, func(context.Context, json.RawMessage) (llm.ToolResult, error) { return llm.ToolResult{}, nil })
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := prepare(t, manyStrings.input); err != nil {
			b.Fatal(err)
		}
	}
}
