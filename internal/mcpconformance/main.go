// Mcpconformance drives the real agentloop CLI through the official MCP
// conformance suite's client scenarios. The suite runs it as
//
//	mcpconformance -agentloop PATH SERVER_URL
//
// with MCP_CONFORMANCE_SCENARIO set, and MCP_CONFORMANCE_CONTEXT when the
// scenario needs credentials. It starts a scripted model on loopback (an
// anthropictest server) that calls every tool the CLI offers it, then runs
// agentloop --mcp-url SERVER_URL against that model, mapping the context to
// the CLI's own configuration. Its exit status is the CLI's.
//
// Run as "mcpconformance browse URL", it is the $BROWSER the CLI opens for
// an authorization request: it fetches URL and follows the redirects to the
// CLI's loopback redirect URI, as a browser would after the user's consent.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentloop/agentloop/anthropictest"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "browse" {
		if err := browse(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "mcpconformance browse:", err)
			os.Exit(1)
		}
		return
	}
	agentloop := flag.String("agentloop", "agentloop", "the agentloop binary to drive")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: mcpconformance -agentloop PATH SERVER_URL")
		os.Exit(2)
	}
	code, err := run(*agentloop, flag.Arg(0), os.Getenv("MCP_CONFORMANCE_SCENARIO"), os.Getenv("MCP_CONFORMANCE_CONTEXT"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpconformance:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

// run runs the CLI for one scenario and returns its exit status.
func run(agentloop, serverURL, scenario, contextJSON string) (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	model := anthropictest.NewServer(anthropictest.Repeat(anthropictest.ReplyFunc(callEveryTool)))
	defer model.Close()

	dir, err := os.MkdirTemp("", "mcpconformance-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)

	// The run's conversation is not kept in the user's state directory.
	args := []string{"--max-iterations", "4", "--no-session-persistence"}
	cfg, err := configFor(serverURL, scenario, contextJSON)
	if err != nil {
		return 0, err
	}
	if cfg == nil {
		args = append(args, "--mcp-url", serverURL)
	} else {
		path := filepath.Join(dir, "mcp.json")
		b, _ := json.Marshal(cfg)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return 0, err
		}
		args = append(args, "--mcp-config", path)
	}
	args = append(args, "Call each tool you have once.")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentloop, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(),
		"ANTHROPIC_API_KEY=sk-ant-conformance-fake",
		"ANTHROPIC_BASE_URL="+model.URL,
		"BROWSER="+self+" browse",
		// Tokens are kept per run, so that scenarios do not share them.
		"XDG_CONFIG_HOME="+dir,
	)
	fmt.Fprintf(os.Stderr, "mcpconformance: scenario %s: %s %s\n", scenario, agentloop, strings.Join(args, " "))
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	return 0, err
}

// configFor returns the --mcp-config file for an authorization scenario,
// with the credentials its context gives, or nil when --mcp-url alone will
// do.
func configFor(serverURL, scenario, contextJSON string) (map[string]any, error) {
	if !strings.HasPrefix(scenario, "auth/") {
		return nil, nil
	}
	c := map[string]any{}
	if contextJSON != "" {
		if err := json.Unmarshal([]byte(contextJSON), &c); err != nil {
			return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	// Secrets go through the environment, as a user's file would have
	// them, not into the file.
	str := func(k string) string { v, _ := c[k].(string); return v }
	// The suite's authorization servers take this client metadata
	// document; a real one would be agentloop's own.
	oauth := map[string]any{"clientMetadataUrl": "https://conformance-test.local/client-metadata.json"}
	if v := str("client_id"); v != "" {
		oauth["clientId"] = v
	}
	if str("client_secret") != "" {
		oauth["clientSecret"] = "${CONFORMANCE_CLIENT_SECRET}"
		os.Setenv("CONFORMANCE_CLIENT_SECRET", str("client_secret"))
	}
	if str("private_key_pem") != "" {
		oauth["privateKey"] = "${CONFORMANCE_PRIVATE_KEY}"
		os.Setenv("CONFORMANCE_PRIVATE_KEY", str("private_key_pem"))
	}
	switch {
	case str("idp_id_token") != "":
		oauth["grant"] = "jwt_bearer"
		oauth["idp"] = map[string]any{
			"issuer":        str("idp_issuer"),
			"tokenEndpoint": str("idp_token_endpoint"),
			"clientId":      str("idp_client_id"),
			"idToken":       "${CONFORMANCE_ID_TOKEN}",
		}
		os.Setenv("CONFORMANCE_ID_TOKEN", str("idp_id_token"))
	case strings.HasPrefix(scenario, "auth/client-credentials"):
		oauth["grant"] = "client_credentials"
	}
	server := map[string]any{"type": "http", "url": serverURL, "oauth": oauth}
	return map[string]any{"mcpServers": map[string]any{"conformance": server}}, nil
}

// callEveryTool is the scripted model: on the first turn it calls every
// tool it is offered, with arguments made from each tool's schema; after
// that it answers in text.
func callEveryTool(r *anthropictest.Request) anthropictest.Reply {
	var body struct {
		Messages []json.RawMessage `json:"messages"`
		Tools    []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil || len(body.Messages) > 1 || len(body.Tools) == 0 {
		return anthropictest.NewStream().Text("Done.").Stop("end_turn")
	}
	s := anthropictest.NewStream().Text("Calling the tools.")
	for i, t := range body.Tools {
		input, _ := json.Marshal(argumentsFor(t.InputSchema))
		s = s.ToolUse(fmt.Sprintf("toolu_%02d", i), t.Name, string(input))
	}
	return s.Stop("tool_use")
}

// argumentsFor makes an argument object that satisfies schema's required
// properties: each one's default, else a value of its type.
func argumentsFor(schema json.RawMessage) map[string]any {
	var s struct {
		Properties map[string]struct {
			Type    any `json:"type"`
			Default any `json:"default"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	args := map[string]any{}
	if json.Unmarshal(schema, &s) != nil {
		return args
	}
	for _, name := range s.Required {
		p := s.Properties[name]
		if p.Default != nil {
			args[name] = p.Default
			continue
		}
		typ, _ := p.Type.(string)
		switch typ {
		case "number", "integer":
			args[name] = 1
		case "boolean":
			args[name] = true
		case "array":
			args[name] = []any{}
		case "object":
			args[name] = map[string]any{}
		default:
			args[name] = "test"
		}
	}
	return args
}

// browse is the browser: it follows url's redirects until one leads to a
// loopback address, which is the CLI's redirect URI, and fetches that.
func browse(url string) error {
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Request.URL.Redacted(), resp.Status)
	}
	return nil
}
