package anthropictest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
)

// localFields are the top-level fields a local model server's
// Anthropic-compatible /v1/messages takes (Ollama 0.14 and later,
// llama.cpp's llama-server, vLLM): the Messages API's core, without its
// Anthropic-only features (context_management, output_config, container,
// compaction, mcp_servers, service_tier…).
var localFields = []string{"model", "max_tokens", "messages", "system", "tools", "tool_choice", "stream",
	"stop_sequences", "temperature", "top_p", "top_k", "metadata", "thinking"}

// refuseLocal returns the 400 a local model server answers a request with
// a field it does not take, or nil.
func refuseLocal(req *Request) Reply {
	var fields map[string]json.RawMessage
	if json.Unmarshal(req.Body, &fields) != nil {
		return nil // the usual checks say why
	}
	var unknown []string
	for name := range fields {
		if !slices.Contains(localFields, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	return HTTPError{Status: http.StatusBadRequest, Message: fmt.Sprintf("unknown fields: %v", unknown)}
}
