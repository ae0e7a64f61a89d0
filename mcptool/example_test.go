package mcptool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/mcptool"
	"github.com/agentloop/agentloop/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// This example serves one tool from an MCP server in the same process, over
// the SDK's in-memory transport, registers it and calls it as the model
// would. A real server is usually a command ([mcptool.ConnectCommand]) or
// a URL ([mcptool.ConnectURL]); the rest is the same.
func Example() {
	ctx := context.Background()

	type greetIn struct {
		Name string `json:"name" jsonschema:"who to greet"`
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "v1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "greet", Description: "Greets someone."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in greetIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Hello, " + in.Name + "!"}}}, nil, nil
		})
	clientEnd, serverEnd := mcp.NewInMemoryTransports()
	session, err := server.Connect(ctx, serverEnd, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer session.Wait()

	srv, err := mcptool.Connect(ctx, clientEnd, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	reg := tool.NewRegistry(tool.Config{})
	if err := srv.Register(ctx, reg); err != nil {
		log.Fatal(err)
	}

	results := reg.Run(ctx, []llm.ToolUse{{ID: "toolu_1", Name: "mcp__greeter__greet", Input: json.RawMessage(`{"name":"Ada"}`)}})
	fmt.Println(srv.Name(), llm.TextOf(results[0].Content))
	// Output: greeter Hello, Ada!
}

// This example is what a command-line program does with each --mcp flag:
// a server that fails to start is reported and skipped, and the agent runs
// with the tools it has.
func ExampleConnectCommand() {
	ctx := context.Background()
	reg := tool.NewRegistry(tool.Config{})
	for _, args := range [][]string{{"npx", "-y", "@modelcontextprotocol/server-everything"}, {"my-server", "--verbose"}} {
		srv, err := mcptool.ConnectCommand(ctx, exec.Command(args[0], args[1:]...), &mcptool.Options{Logger: slog.Default()})
		if err != nil {
			log.Print(err) // names the command and quotes the end of its stderr
			continue
		}
		defer srv.Close() // on exit: the server and anything it started end
		if err := srv.Register(ctx, reg); err != nil {
			log.Print(err) // the tools that could not be registered
		}
	}
	// ... run the agent with reg ...
}

// This example connects to a remote server that requires OAuth: the user
// authorizes once in the browser, and the token is kept for later runs.
func ExampleConnectURL() {
	ctx := context.Background()
	dir, err := os.UserConfigDir()
	if err != nil {
		log.Fatal(err)
	}
	srv, err := mcptool.ConnectURL(ctx, "https://mcp.example.com/mcp", &mcptool.Options{
		OAuth: &mcptool.OAuth{
			OpenURL: func(ctx context.Context, url string) error {
				fmt.Fprintln(os.Stderr, "Authorize in your browser:", url)
				return nil // the flow waits for the browser's redirect
			},
			Store: mcptool.DirStore(filepath.Join(dir, "myapp", "mcp-tokens")),
		},
	})
	if err != nil {
		log.Print(err) // errors.Is(err, mcptool.ErrAuthorization) if authorizing failed
		return
	}
	defer srv.Close()
	// ... srv.Register(ctx, reg) ...
}

// The model, permission rules and logs see a server's tools under these
// names.
func ExampleToolName() {
	fmt.Println(mcptool.ToolName("github", "create_issue"))
	fmt.Println(mcptool.ToolName("my files", "read.file"))
	// Output:
	// mcp__github__create_issue
	// mcp__my_files__read_file
}
