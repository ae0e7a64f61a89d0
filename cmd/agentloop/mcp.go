package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/agentloop/agentloop/mcptool"
	"github.com/agentloop/agentloop/tool"
)

// mcpFlags are the MCP flags beyond --mcp and --mcp-url.
type mcpFlags struct {
	// mcpEnv is --mcp-env, resolved by check to NAME=VALUE entries.
	mcpEnv []string
}

// define defines the flags on fs.
func (m *mcpFlags) define(fs *flag.FlagSet) {
	fs.Var((*listFlag)(&m.mcpEnv), "mcp-env", "")
}

// check validates the flags and resolves what they take from the
// environment. Its errors name the flag but never show a value, which may
// be a secret.
func (m *mcpFlags) check(getenv func(string) string) error {
	for i, kv := range m.mcpEnv {
		name, _, hasValue := strings.Cut(kv, "=")
		if !validEnvName(name) {
			return usageError("--mcp-env %q: want NAME=VALUE or NAME, with a name of letters, digits and underscores", name)
		}
		if !hasValue {
			v := getenv(name)
			if v == "" {
				return usageError("--mcp-env %s: %s is not set in this environment, so there is nothing to pass through", name, name)
			}
			m.mcpEnv[i] = name + "=" + v
		}
	}
	return nil
}

// validEnvName reports whether name is a portable environment variable
// name: letters, digits and underscores, not starting with a digit.
func validEnvName(name string) bool {
	if name == "" || '0' <= name[0] && name[0] <= '9' {
		return false
	}
	return strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == ""
}

// connectMCP starts or connects to the MCP servers the flags name. A server
// that fails is reported and skipped: the agent works on with the others.
func (s *session) connectMCP(ctx context.Context, o *options, reg *tool.Registry) {
	opts := &mcptool.Options{Logger: s.log, HTTPClient: httpClient(s.log, o.verbose), Env: o.mcpEnv}
	connect := func(what string, conn func() (*mcptool.Server, error)) {
		srv, err := conn()
		if err != nil {
			s.render.note("MCP server %s is not available; continuing without its tools: %v", what, err)
			return
		}
		s.servers = append(s.servers, srv)
		// Register registers what it can and names what it could not.
		if err := srv.Register(ctx, reg); err != nil {
			s.render.note("MCP server %s: some of its tools are not available: %v", what, err)
		}
	}
	for _, line := range o.mcp {
		connect(fmt.Sprintf("%q", line), func() (*mcptool.Server, error) { return mcptool.ConnectCommand(ctx, line, opts) })
	}
	for _, u := range o.mcpURL {
		connect(u, func() (*mcptool.Server, error) { return mcptool.ConnectURL(ctx, u, opts) })
	}
}
