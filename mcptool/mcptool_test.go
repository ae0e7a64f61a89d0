package mcptool

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// png is a PNG signature: enough bytes to stand for an image.
var png = []byte("\x89PNG\r\n\x1a\n")

// dottedSchema is a hand-written schema with keywords a generator would not
// write, to see that it reaches the model unchanged.
const dottedSchema = `{"type":"object","properties":{"n":{"type":"integer","minimum":1,"description":"how many"}},"required":["n"],"additionalProperties":false}`

// testServer is an in-process MCP server whose tools cover each kind of
// result. name prefixes echo's answers so tests can tell servers apart.
// started and cancelled, when not nil, report the slow tool's call being
// under way and seeing its context end.
func testServer(name string, started, cancelled chan<- struct{}) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "v1"}, nil)
	type echoIn struct {
		Message string `json:"message" jsonschema:"the message to echo"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes the message."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + ": " + in.Message}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "image", Description: "Returns an image."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "here it is"},
				&mcp.ImageContent{MIMEType: "image/png", Data: png},
			}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return nil, nil, errors.New("the disk is full")
		})
	mcp.AddTool(s, &mcp.Tool{Name: "mixed", Description: "Returns content of every other kind."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.AudioContent{MIMEType: "audio/wav", Data: []byte("RIFF")},
				&mcp.ResourceLink{URI: "file:///r.txt", Name: "r.txt", MIMEType: "text/plain"},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://note", MIMEType: "text/plain", Text: "note body"}},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://pic", MIMEType: "image/png", Blob: png}},
				&mcp.ImageContent{MIMEType: "image/svg+xml", Data: []byte("<svg/>")},
			}}, nil, nil
		})
	s.AddTool(&mcp.Tool{Name: "structured", Description: "Returns only structured content.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: map[string]int{"answer": 42}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "structured_too", Description: "Returns structured content and text.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// The text repeats the structured content when asked to, as
			// the spec recommends; else it is a summary.
			text := "The answer is 42."
			if string(req.Params.Arguments) == `{"repeat":true}` {
				text = `{ "answer": 42 }`
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: map[string]int{"answer": 42}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "structured_image", Description: "Returns structured content and an image.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png", Data: png}}, StructuredContent: map[string]int{"answer": 42}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "dotted.name", Description: "Has a name the API rejects.", InputSchema: json.RawMessage(dottedSchema)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "slow", Description: "Waits until cancelled.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if started != nil {
				started <- struct{}{}
			}
			<-ctx.Done()
			if cancelled != nil {
				close(cancelled)
			}
			return nil, ctx.Err()
		})
	return s
}

// connectInMemory connects to srv over the SDK's in-memory transport and
// closes both ends when the test ends.
func connectInMemory(t testing.TB, srv *mcp.Server, opts *Options) *Server {
	t.Helper()
	ctx := t.Context()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Connect(ctx, ct, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		ss.Wait()
	})
	return s
}

func registered(t *testing.T, servers ...*Server) *tool.Registry {
	t.Helper()
	reg := tool.NewRegistry(tool.Config{})
	for _, s := range servers {
		if err := s.Register(t.Context(), reg); err != nil {
			t.Fatalf("Register(%s): %v", s.Name(), err)
		}
	}
	return reg
}

func TestCall(t *testing.T) {
	s := connectInMemory(t, testServer("alpha", nil, nil), nil)
	reg := registered(t, s)
	b64 := base64.StdEncoding.EncodeToString(png)
	tests := []struct {
		name, input string
		want        llm.ToolResult
	}{
		{"echo", `{"message":"hi"}`, llm.ToolResult{Content: []llm.Block{llm.Text{Text: "alpha: hi"}}}},
		{"image", `{}`, llm.ToolResult{Content: []llm.Block{
			llm.Text{Text: "here it is"},
			llm.Image{MediaType: "image/png", Data: b64},
		}}},
		{"fail", `{}`, llm.ToolResult{Content: []llm.Block{llm.Text{Text: "the disk is full"}}, IsError: true}},
		{"mixed", `{}`, llm.ToolResult{Content: []llm.Block{
			llm.Text{Text: "[audio omitted: 4 bytes of audio/wav, which the model cannot hear]"},
			llm.Text{Text: `[resource link: file:///r.txt name="r.txt" type=text/plain]`},
			llm.Text{Text: "[resource mem://note]\nnote body"},
			llm.Image{MediaType: "image/png", Data: b64},
			llm.Text{Text: "[image omitted: 6 bytes of image/svg+xml, a type the model cannot read]"},
		}}},
		{"structured", `{}`, llm.ToolResult{Content: []llm.Block{llm.Text{Text: `{"answer":42}`}}}},
		// With text, the text alone: not the same content twice.
		{"structured_too", `{}`, llm.ToolResult{Content: []llm.Block{llm.Text{Text: "The answer is 42."}}}},
		{"structured_too", `{"repeat":true}`, llm.ToolResult{Content: []llm.Block{llm.Text{Text: `{ "answer": 42 }`}}}},
		{"structured_image", `{}`, llm.ToolResult{Content: []llm.Block{llm.Image{MediaType: "image/png", Data: b64}, llm.Text{Text: `{"answer":42}`}}}},
		// The model calls the cleaned name; the server gets its own.
		{"dotted_name", `{"n":3}`, llm.ToolResult{Content: []llm.Block{llm.Text{Text: `{"n":3}`}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := reg.Run(t.Context(), []llm.ToolUse{{ID: "id1", Name: "mcp__alpha__" + tt.name, Input: json.RawMessage(tt.input)}})
			tt.want.ToolUseID = "id1"
			if diff := cmp.Diff([]llm.ToolResult{tt.want}, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestToolsPassSchemaThrough(t *testing.T) {
	s := connectInMemory(t, testServer("alpha", nil, nil), nil)
	var names []string
	var spec llm.ToolSpec
	for _, sp := range registered(t, s).Specs() {
		names = append(names, sp.Name)
		if sp.Name == "mcp__alpha__dotted_name" {
			spec = sp
		}
	}
	var want []string
	for _, n := range []string{"dotted_name", "echo", "fail", "image", "mixed", "slow", "structured", "structured_image", "structured_too"} {
		want = append(want, "mcp__alpha__"+n)
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("tool names (-want +got):\n%s", diff)
	}
	var gotSchema, wantSchema any
	if err := json.Unmarshal(spec.InputSchema, &gotSchema); err != nil {
		t.Fatal(err)
	}
	json.Unmarshal([]byte(dottedSchema), &wantSchema)
	if diff := cmp.Diff(wantSchema, gotSchema); diff != "" {
		t.Errorf("schema (-server +registered):\n%s", diff)
	}
	if spec.Description != "Has a name the API rejects." {
		t.Errorf("description = %q", spec.Description)
	}
}

// TestRegisterPrefixesServer checks that each server's tools carry its
// name, so that two servers' tools of one name both work.
func TestRegisterPrefixesServer(t *testing.T) {
	alpha := connectInMemory(t, testServer("alpha", nil, nil), nil)
	beta := connectInMemory(t, testServer("beta", nil, nil), nil)
	reg := registered(t, alpha, beta)
	got := reg.Run(t.Context(), []llm.ToolUse{
		{ID: "a", Name: "mcp__alpha__echo", Input: json.RawMessage(`{"message":"x"}`)},
		{ID: "b", Name: "mcp__beta__echo", Input: json.RawMessage(`{"message":"y"}`)},
	})
	want := []llm.ToolResult{
		{ToolUseID: "a", Content: []llm.Block{llm.Text{Text: "alpha: x"}}},
		{ToolUseID: "b", Content: []llm.Block{llm.Text{Text: "beta: y"}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	// Registering the same server again has nowhere left to go.
	err := beta.Register(t.Context(), reg)
	if err == nil || !strings.Contains(err.Error(), `server "beta": tool "mcp__beta__echo": duplicate tool name`) {
		t.Errorf("second Register error = %v, want one naming beta's echo", err)
	}
}

func TestCancelReachesServer(t *testing.T) {
	started := make(chan struct{})
	cancelled := make(chan struct{})
	s := connectInMemory(t, testServer("alpha", started, cancelled), nil)
	reg := registered(t, s)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan []llm.ToolResult)
	go func() {
		done <- reg.Run(ctx, []llm.ToolUse{{ID: "s", Name: "mcp__alpha__slow", Input: json.RawMessage(`{}`)}})
	}()
	<-started
	cancel()
	got := <-done
	if len(got) != 1 || !got[0].IsError {
		t.Errorf("result = %+v, want one is_error result", got)
	}
	<-cancelled // the server's handler saw its context end
}

func TestOptionsName(t *testing.T) {
	tests := []struct {
		opts *Options
		want string
	}{
		{nil, "alpha_srv"}, // reported by the server, cleaned
		{&Options{Name: "mine"}, "mine"},
	}
	for _, tt := range tests {
		s := connectInMemory(t, testServer("alpha srv", nil, nil), tt.opts)
		if s.Name() != tt.want {
			t.Errorf("Name() = %q, want %q", s.Name(), tt.want)
		}
	}
}

func TestConnectURL(t *testing.T) {
	srv := testServer("web", nil, nil)
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer ts.Close()
	client := ts.Client()
	defer client.CloseIdleConnections()

	// The handshake's context ends at once; the connection must not.
	ctx, cancel := context.WithCancel(t.Context())
	s, err := ConnectURL(ctx, ts.URL, &Options{HTTPClient: client})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Name() != "web" {
		t.Errorf("Name() = %q, want web", s.Name())
	}
	got := registered(t, s).Run(t.Context(), []llm.ToolUse{{ID: "1", Name: "mcp__web__echo", Input: json.RawMessage(`{"message":"over http"}`)}})
	want := []llm.ToolResult{{ToolUseID: "1", Content: []llm.Block{llm.Text{Text: "web: over http"}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

func TestConnectURLErrors(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	defer ts.Close()
	for _, u := range []string{"ftp://x", "not a url", ts.URL} {
		_, err := ConnectURL(t.Context(), u, &Options{HTTPClient: ts.Client()})
		if err == nil || !strings.Contains(err.Error(), u) {
			t.Errorf("ConnectURL(%q) error = %v, want one naming the URL", u, err)
		}
	}
	ts.Client().CloseIdleConnections()
}

func TestToolName(t *testing.T) {
	long := strings.Repeat("x", 60)
	tests := []struct{ server, tool, want string }{
		{"github", "create_issue", "mcp__github__create_issue"},
		{"everything", "get-sum", "mcp__everything__get-sum"},
		{"my server", "a.b/c", "mcp__my_server__a_b_c"},
		{"é", "t", "mcp______t"},
		// Cut to 64, ending in a hash of the whole, so that long names
		// that differ only at the end stay apart.
		{"s", long + "1", "mcp__s__" + long[:47] + "_7861a61c"},
		{"s", long + "2", "mcp__s__" + long[:47] + "_f43c21bc"},
	}
	for _, tt := range tests {
		got := ToolName(tt.server, tt.tool)
		if got != tt.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", tt.server, tt.tool, got, tt.want)
		}
		nop := func(context.Context, json.RawMessage) (llm.ToolResult, error) { return llm.ToolResult{}, nil }
		if _, err := tool.NewRaw(got, "", json.RawMessage(`{"type":"object"}`), nop); err != nil {
			t.Errorf("ToolName(%q, %q) = %q, not a valid tool name: %v", tt.server, tt.tool, got, err)
		}
	}
}

// TestRegisterSkipsBadTool checks that one tool this package cannot
// register costs only that tool: here its name is taken.
func TestRegisterSkipsBadTool(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "odd", Version: "v1"}, nil)
	ok := func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "fine"}}}, nil
	}
	srv.AddTool(&mcp.Tool{Name: "good", InputSchema: json.RawMessage(`{"type":"object"}`)}, ok)
	srv.AddTool(&mcp.Tool{Name: "taken", InputSchema: json.RawMessage(`{"type":"object"}`)}, ok)
	s := connectInMemory(t, srv, nil)
	reg := tool.NewRegistry(tool.Config{})
	for _, name := range []string{"mcp__odd__taken"} {
		tl, err := tool.NewRaw(name, "", json.RawMessage(`{"type":"object"}`),
			func(context.Context, json.RawMessage) (llm.ToolResult, error) { return llm.ToolResult{}, nil })
		if err != nil {
			t.Fatal(err)
		}
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	err := s.Register(t.Context(), reg)
	if err == nil || !strings.Contains(err.Error(), `server "odd": tool "mcp__odd__taken": duplicate tool name`) {
		t.Errorf("Register error = %v, want a duplicate error naming the server and the tool", err)
	}
	got := reg.Run(t.Context(), []llm.ToolUse{{ID: "1", Name: "mcp__odd__good", Input: json.RawMessage(`{}`)}})
	if diff := cmp.Diff([]llm.ToolResult{{ToolUseID: "1", Content: []llm.Block{llm.Text{Text: "fine"}}}}, got); diff != "" {
		t.Errorf("the good tool (-want +got):\n%s", diff)
	}
}

// TestRegisterUnvalidatableSchema checks that a tool whose schema the
// local validator cannot use (a remote $ref, draft-04) is registered all
// the same, with its schema passed through, and that its input reaches the
// server, which validates it itself.
func TestRegisterUnvalidatableSchema(t *testing.T) {
	schemas := map[string]string{
		"remote_ref": `{"type":"object","properties":{"n":{"$ref":"https://example.com/n.json"}},"required":["n"]}`,
		"draft_04": `{"type":"object",` + // draft-04 keywords, read as 2020-12 for want of "$schema"
			`"properties":{"n":{"type":"integer","minimum":0,"exclusiveMinimum":true}},"required":["n"]}`,
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "odd", Version: "v1"}, nil)
	echo := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "server got " + string(req.Params.Arguments)}}}, nil
	}
	for name, schema := range schemas {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(schema)}, echo)
	}
	reg := registered(t, connectInMemory(t, srv, nil))
	for name, schema := range schemas {
		name = "mcp__odd__" + name
		tl, ok := reg.Lookup(name)
		if !ok {
			t.Errorf("tool %s was not registered", name)
			continue
		}
		var got, want any
		json.Unmarshal(tl.Spec().InputSchema, &got)
		json.Unmarshal([]byte(schema), &want)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s schema (-server +registered):\n%s", name, diff)
		}
		res := reg.Run(t.Context(), []llm.ToolUse{{ID: "1", Name: name, Input: json.RawMessage(`{"n":"not checked here"}`)}})
		wantRes := []llm.ToolResult{{ToolUseID: "1", Content: []llm.Block{llm.Text{Text: `server got {"n":"not checked here"}`}}}}
		if diff := cmp.Diff(wantRes, res); diff != "" {
			t.Errorf("%s call (-want +got):\n%s", name, diff)
		}
	}
}

// TestBlocksEdges covers the content the in-process server cannot send.
func TestBlocksEdges(t *testing.T) {
	tests := []struct {
		in   mcp.Content
		want llm.Block
	}{
		{&mcp.EmbeddedResource{}, llm.Text{Text: "[empty embedded resource]"}},
		{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://z", MIMEType: "application/zip", Blob: []byte("PK")}},
			llm.Text{Text: "[resource mem://z omitted: 2 bytes of application/zip]"}},
		{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://doc.pdf", MIMEType: "application/pdf", Blob: []byte("%PDF")}},
			llm.RawBlock{Type: "document", JSON: json.RawMessage(`{"source":{"data":"JVBERg==","media_type":"application/pdf","type":"base64"},"title":"mem://doc.pdf","type":"document"}`)}},
		{&mcp.ImageContent{Data: []byte("?")}, llm.Text{Text: "[image omitted: 1 bytes of unknown type, a type the model cannot read]"}},
		{&mcp.ResourceLink{URI: "https://x/y", Description: "the y"}, llm.Text{Text: `[resource link: https://x/y description="the y"]`}},
	}
	for _, tt := range tests {
		got := blocks([]mcp.Content{tt.in})
		if diff := cmp.Diff([]llm.Block{tt.want}, got); diff != "" {
			t.Errorf("blocks(%T) (-want +got):\n%s", tt.in, diff)
		}
	}
}
