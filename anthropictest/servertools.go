package anthropictest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// This file builds the blocks of the API's server tools, as the web search,
// web fetch, code execution and tool search pages show them: the model's
// call, a server_tool_use block with an id "srvtoolu_…", streamed as a
// client call is, then the server's result, which arrives whole, in the
// same assistant turn.

// ServerToolUse starts a server_tool_use block, the model's call of the
// server tool name ("web_search", "tool_search_tool_regex"…), streamed as
// ToolUse streams a client call.
func (s *Stream) ServerToolUse(id, name string, fragments ...string) *Stream {
	return s.Block(Block{Type: "server_tool_use", ID: id, Name: name}, fragments...)
}

// ToolSearchResult sends the result of the tool search call toolUseID: a
// tool_search_tool_result whose tool_reference blocks name the tools
// found, whose definitions the API then loads for the model.
func (s *Stream) ToolSearchResult(toolUseID string, toolNames ...string) *Stream {
	refs := make([]map[string]string, len(toolNames))
	for i, n := range toolNames {
		refs[i] = map[string]string{"type": "tool_reference", "tool_name": n}
	}
	return s.serverResult("tool_search_tool_result", toolUseID, map[string]any{
		"type": "tool_search_tool_search_result", "tool_references": refs})
}

// A SearchResult is one result of a web search.
type SearchResult struct{ URL, Title, PageAge string }

// WebSearchResult sends the result of the web search call toolUseID: a
// web_search_tool_result of web_search_result blocks, each with an opaque
// encrypted_content, as the API's, that must go back as it came.
func (s *Stream) WebSearchResult(toolUseID string, results ...SearchResult) *Stream {
	content := make([]map[string]string, len(results))
	for i, r := range results {
		content[i] = map[string]string{"type": "web_search_result", "url": r.URL, "title": r.Title,
			"encrypted_content": fmt.Sprintf("EqgfCioIARgBIiQ3YTAwMjY1Mi1%04d", i), "page_age": r.PageAge}
	}
	return s.serverResult("web_search_tool_result", toolUseID, content)
}

// WebFetchResult sends the result of the web fetch call toolUseID: a
// web_fetch_tool_result holding the page at url as a plain-text document.
func (s *Stream) WebFetchResult(toolUseID, url, text string) *Stream {
	return s.serverResult("web_fetch_tool_result", toolUseID, map[string]any{
		"type": "web_fetch_result", "url": url, "retrieved_at": "2026-11-20T10:00:00Z",
		"content": map[string]any{"type": "document", "title": url, "citations": map[string]bool{"enabled": false},
			"source": map[string]string{"type": "text", "media_type": "text/plain", "data": text}},
	})
}

// CodeExecutionResult sends the result of the code execution call
// toolUseID (a server_tool_use named "bash_code_execution"): a
// bash_code_execution_tool_result with the command's output and exit code.
func (s *Stream) CodeExecutionResult(toolUseID, stdout, stderr string, returnCode int) *Stream {
	return s.serverResult("bash_code_execution_tool_result", toolUseID, map[string]any{
		"type": "bash_code_execution_result", "stdout": stdout, "stderr": stderr, "return_code": returnCode, "content": []any{}})
}

// ServerToolUsage sets the server_tool_use counts of message_delta's usage,
// which the API bills apart: web searches and web fetches.
func (s *Stream) ServerToolUsage(webSearches, webFetches int) *Stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.server, s.plan = [2]int{webSearches, webFetches}, nil
	return s
}

// serverResult sends a server tool's result block, whole.
func (s *Stream) serverResult(typ, toolUseID string, content any) *Stream {
	raw, err := json.Marshal(map[string]any{"type": typ, "tool_use_id": toolUseID, "content": content})
	if err != nil {
		panic("anthropictest: " + err.Error()) // only maps of strings: cannot happen
	}
	return s.Block(Block{Type: typ, Raw: raw})
}

// appendServerUse appends the server_tool_use member of a usage, if any.
func (s *Stream) appendServerUse(b []byte) []byte {
	if s.server == [2]int{} {
		return b
	}
	return fmt.Appendf(b, `,"server_tool_use":{"web_search_requests":%d,"web_fetch_requests":%d}`, s.server[0], s.server[1])
}

// checkTools checks what the API refuses in a request's tools: a tool
// sent with defer_loading and no tool search tool to load it, or every tool
// deferred. Only a body that defers a tool is decoded.
func checkTools(body []byte) []violation {
	var p struct{ Tools []json.RawMessage }
	if !bytes.Contains(body, []byte(`"defer_loading"`)) || json.Unmarshal(body, &p) != nil {
		return nil
	}
	var deferred, search, total int
	for _, raw := range p.Tools {
		var t struct {
			Type         string `json:"type"`
			DeferLoading bool   `json:"defer_loading"`
		}
		if json.Unmarshal(raw, &t) != nil {
			continue
		}
		total++
		if t.DeferLoading {
			deferred++
		}
		if strings.HasPrefix(t.Type, "tool_search_tool_") {
			search++
		}
	}
	switch {
	case deferred > 0 && search == 0:
		return []violation{{"tools", "tools", "defer_loading requires a tool search tool (tool_search_tool_regex or tool_search_tool_bm25) among the tools"}}
	case deferred > 0 && deferred == total:
		return []violation{{"tools", "tools", "at least one tool must not be deferred"}}
	}
	return nil
}
