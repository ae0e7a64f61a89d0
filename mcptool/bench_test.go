package mcptool

import (
	"encoding/json"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// benchCall measures one echo call through a registry: the adapter, the
// SDK's JSON-RPC and the transport, both ways.
func benchCall(b *testing.B, s *Server) {
	reg := tool.NewRegistry(tool.Config{})
	if err := s.Register(b.Context(), reg); err != nil {
		b.Fatal(err)
	}
	calls := []llm.ToolUse{{ID: "1", Name: ToolName(s.Name(), "echo"), Input: json.RawMessage(`{"message":"hi"}`)}}
	b.ReportAllocs()
	for b.Loop() {
		if r := reg.Run(b.Context(), calls); r[0].IsError {
			b.Fatal(r[0])
		}
	}
}

func BenchmarkCallInMemory(b *testing.B) {
	benchCall(b, connectInMemory(b, testServer("alpha", nil, nil), nil))
}

func BenchmarkCallStdio(b *testing.B) {
	s, err := ConnectCommand(b.Context(), helperCommand(b, "server"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	benchCall(b, s)
}
