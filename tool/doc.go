// Package tool is the action system of the agent loop: the seed's tools.py.
// It turns typed Go functions into tools with generated JSON schemas, checks
// the model's input against them, and runs calls concurrently so that no
// tool failure can crash the loop.
//
// A tool is a function from a struct to a result:
//
//	type addInput struct {
//		A float64 `json:"a" jsonschema:"the first addend"`
//		B float64 `json:"b" jsonschema:"the second addend"`
//	}
//	add, err := tool.New("add", "Add two numbers.",
//		func(ctx context.Context, in addInput) (float64, error) { return in.A + in.B, nil })
//
//	reg := tool.NewRegistry(tool.Config{})
//	err = reg.Register(add)
//	req.Tools = reg.Specs()
//	...
//	results := reg.Run(ctx, calls) // one llm.ToolResult per call, in order
//
// # Schemas
//
// Schemas are generated, and inputs validated, by
// github.com/google/jsonschema-go. It is the library the official MCP Go SDK
// uses for the same job, so a tool's schema here and over MCP come out the
// same; it is maintained at Google alongside that SDK; and, unlike
// invopop/jsonschema, it validates as well as generates, so one library both
// describes the input to the model and checks what the model sends back.
// A raw schema it cannot use (draft-04, a remote $ref) still makes a tool,
// with its input checked only for being a JSON object; see [NewRaw].
//
// # Failures are data
//
// [Registry.Run] never returns an error. An unknown tool, input that is not
// JSON or breaks the schema, an error, a panic, a timeout or cancellation each
// become an is_error [llm.ToolResult] whose text says what went wrong (which
// field, and why), so that the model can correct itself on its next turn.
// Panics are recovered; the model gets the panic value and the logger gets
// the stack.
//
// # Concurrency
//
// Calls run concurrently, up to [Config.MaxConcurrency] at once across the
// whole registry. A tool marked [Tool.Sequential] runs its calls one at a
// time, in the order they were started. Each call runs in its own goroutine
// under its own timeout; if the call's context ends first, the model gets a
// timeout or "cancelled" result at once. The handler, though, keeps its
// concurrency slot and its sequential turn until it has really returned, so
// that a handler that ignores its context never runs beside the calls the
// limits keep it from; later calls wait for it, as long as their own
// context lets them. [Registry.Wait] waits for such handlers, with a
// deadline, and names those still running. Tools should honour ctx.
package tool
