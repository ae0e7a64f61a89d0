package mcptool

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// The test binary doubles as the MCP server the command tests start: run
// with helperEnv set, it becomes the process that value names instead of
// running tests.
const helperEnv = "MCPTOOL_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		goleak.VerifyTestMain(m)
	case "server":
		helperServer()
	case "die":
		// A server that cannot start, as one missing its config would.
		fmt.Fprintln(os.Stderr, "starting")
		fmt.Fprintln(os.Stderr, "fatal: no API token configured")
		os.Exit(1)
	case "mute":
		// A server that never answers: it reads and ignores its input.
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	case "stubborn":
		// A server that never answers, ignores the end of its input and
		// SIGTERM, and records each SIGTERM in the file $STUBBORN_LOG.
		terms := make(chan os.Signal, 1)
		signal.Notify(terms, syscall.SIGTERM)
		go io.Copy(io.Discard, os.Stdin)
		for range terms {
			f, err := os.OpenFile(os.Getenv("STUBBORN_LOG"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err == nil {
				fmt.Fprintln(f, "SIGTERM")
				f.Close()
			}
		}
	case "grandchild":
		helperGrandchild()
	default:
		fmt.Fprintln(os.Stderr, "unknown helper", os.Getenv(helperEnv))
		os.Exit(2)
	}
}

// helperCommand returns a command that runs the test binary as helper.
func helperCommand(t testing.TB, helper string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+helper)
	return cmd
}

// helperServer is an MCP server over stdio with tools to misbehave with:
//
//   - echo returns its message;
//   - env returns the server's environment, one NAME=VALUE a line;
//   - crash kills the server in the middle of the call;
//   - spawn starts a grandchild process that ignores SIGTERM and never
//     exits, hands it file descriptor 3 if the server has one, and returns
//     its pid once it runs.
func helperServer() {
	fmt.Fprintln(os.Stderr, "helper server: up")
	s := mcp.NewServer(&mcp.Implementation{Name: "helper", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes the message."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in struct {
			Message string `json:"message"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Message}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Returns the server's environment, a line a variable."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(os.Environ(), "\n")}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Crashes the server."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "helper server: simulated crash")
			os.Exit(3)
			return nil, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "spawn", Description: "Starts a stubborn grandchild."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"=grandchild")
			if f := os.NewFile(3, "witness"); f != nil {
				cmd.ExtraFiles = []*os.File{f}
			}
			ready, err := cmd.StdoutPipe()
			if err != nil {
				return nil, nil, err
			}
			if err := cmd.Start(); err != nil {
				return nil, nil, err
			}
			// The grandchild writes one byte once its signal handling
			// is set up.
			if _, err := ready.Read(make([]byte, 1)); err != nil {
				return nil, nil, fmt.Errorf("grandchild: %v", err)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(cmd.Process.Pid)}}}, nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "helper server:", err)
	}
	// Exit without waiting for the grandchild: it is left behind, as a
	// careless real server's children would be.
	os.Exit(0)
}

// helperGrandchild shrugs off SIGTERM and SIGINT and never exits by
// itself: only SIGKILL ends it.
func helperGrandchild() {
	shrug := make(chan os.Signal, 1)
	signal.Notify(shrug, syscall.SIGTERM, os.Interrupt)
	os.Stdout.Write([]byte{'r'})
	for range shrug {
	}
}
