package mcptool

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
)

// Register lists the server's tools and registers them in reg, each under
// the name [ToolName] gives it, so that the model, permission rules and
// logs can tell which server a tool comes from. Input schemas are the
// server's, unchanged. Calling a tool forwards the call, with its ctx, to
// the server. A tool that cannot be registered, such as one whose name is
// taken, is skipped and named in the returned error; the others are
// registered all the same, so the agent can work with what it has.
//
// When the server's list changes later (notifications/tools/list_changed),
// its new tools are registered in reg too, so that the agent offers them
// from its next run on, and a call to a tool the server no longer lists
// gets an is_error result saying so.
func (s *Server) Register(ctx context.Context, reg *tool.Registry) error {
	list, err := s.list(ctx)
	if err != nil {
		return err
	}
	s.tools.mu.Lock()
	defer s.tools.mu.Unlock()
	s.tools.reg, s.tools.registered = reg, nil
	return s.registerLocked(list)
}

// toolState is what list changes need: the registry Register used, and
// the server's tools, registered and listed.
type toolState struct {
	mu         sync.Mutex
	reg        *tool.Registry
	registered map[string]bool // remote names registered in reg
	listed     map[string]bool // remote names in the server's latest list; nil before Register
	refreshing sync.WaitGroup
}

// registerLocked registers the tools of list not registered yet, and
// records list as the server's.
func (s *Server) registerLocked(list []*mcp.Tool) error {
	if s.tools.registered == nil {
		s.tools.registered = map[string]bool{}
	}
	s.tools.listed = map[string]bool{}
	var errs []error
	for _, t := range list {
		s.tools.listed[t.Name] = true
		if s.tools.registered[t.Name] {
			continue
		}
		reg := s.tools.reg
		tt, err := s.newTool(ToolName(s.name, t.Name), t)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := reg.Register(tt); err != nil {
			errs = append(errs, fmt.Errorf("mcptool: server %q: %w", s.name, err))
			continue
		}
		s.tools.registered[t.Name] = true
	}
	return errors.Join(errs...)
}

// toolsChanged handles notifications/tools/list_changed: it lists the
// tools again, in the background, since the notification's handler must
// not wait on the server.
func (s *Server) toolsChanged() {
	s.tools.mu.Lock()
	registered := s.tools.reg != nil
	if registered {
		s.tools.refreshing.Add(1)
	}
	s.tools.mu.Unlock()
	if !registered {
		return
	}
	go func() {
		defer s.tools.refreshing.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		list, err := s.list(ctx)
		if err != nil {
			s.logger.Warn("mcp server's tools changed, but listing them failed", "err", err)
			return
		}
		s.tools.mu.Lock()
		defer s.tools.mu.Unlock()
		if err := s.registerLocked(list); err != nil {
			s.logger.Warn("mcp server's tools changed; some cannot be registered", "err", err)
		}
		s.logger.Info("mcp server's tools changed", "tools", len(list))
	}()
}

// withdrawn reports whether the server's latest list lacks remote.
func (s *Server) withdrawn(remote string) bool {
	s.tools.mu.Lock()
	defer s.tools.mu.Unlock()
	return s.tools.listed != nil && !s.tools.listed[remote]
}

// list returns every tool the server offers, across pages.
func (s *Server) list(ctx context.Context) ([]*mcp.Tool, error) {
	var list []*mcp.Tool
	for t, err := range s.session.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("mcptool: list tools of server %q: %w", s.name, err)
		}
		list = append(list, t)
	}
	return list, nil
}

// newTool wraps the server's tool t as a tool named name.
func (s *Server) newTool(name string, t *mcp.Tool) (*tool.Tool, error) {
	schema, err := json.Marshal(t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("mcptool: server %q: tool %q: input schema: %w", s.name, t.Name, err)
	}
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	remote := t.Name // the server's own name, whatever name the model uses
	tt, err := tool.NewRaw(name, desc, schema, func(ctx context.Context, input json.RawMessage) (llm.ToolResult, error) {
		return s.call(ctx, remote, input)
	})
	if err != nil {
		return nil, fmt.Errorf("mcptool: server %q: %w", s.name, err) // err names the tool
	}
	tt.Deferrable = true // with tool search on, an agent loads it when a search finds it
	return tt, nil
}

// call calls the server's tool named remote. Whatever goes wrong short of
// cancellation becomes an is_error result naming the server, so a crashed
// server costs the model one tool, not the run.
func (s *Server) call(ctx context.Context, remote string, input json.RawMessage) (llm.ToolResult, error) {
	if s.withdrawn(remote) {
		msg := fmt.Sprintf("mcp server %q no longer offers tool %q", s.name, remote)
		return llm.ToolResult{Content: []llm.Block{llm.Text{Text: msg}}, IsError: true}, nil
	}
	params := &mcp.CallToolParams{Name: remote}
	if len(input) > 0 {
		params.Arguments = input
	}
	// A progress token lets the server report progress, and names the
	// call when it does.
	token := rand.Text()
	params.SetProgressToken(token)
	trace := propagation.MapCarrier{}
	s.propagator.Inject(ctx, trace)
	for k, v := range trace {
		params.Meta[k] = v // the _meta convention for trace context
	}
	s.calls.Store(token, remote)
	defer s.calls.Delete(token)
	res, err := s.session.CallTool(ctx, params)
	if err != nil {
		if ctx.Err() != nil {
			// Cancelled or timed out: the registry words that result.
			return llm.ToolResult{}, fmt.Errorf("mcp server %q: tool %q: %w", s.name, remote, context.Cause(ctx))
		}
		msg := fmt.Sprintf("mcp server %q failed calling tool %q: %v", s.name, remote, err)
		if lostConnection(err) {
			msg = fmt.Sprintf("mcp server %q is not running (it may have crashed), so tool %q is unavailable: %v", s.name, remote, err)
			if s.proc != nil {
				s.logger.Warn("mcp server connection lost", "tool", remote, "err", err, "stderr", s.proc.stderr.tail())
			} else {
				s.logger.Warn("mcp server connection lost", "tool", remote, "err", err)
			}
		}
		return llm.ToolResult{Content: []llm.Block{llm.Text{Text: msg}}, IsError: true}, nil
	}
	out := llm.ToolResult{Content: blocks(res.Content), IsError: res.IsError}
	if res.StructuredContent != nil && !slices.ContainsFunc(res.Content, isText) {
		// The spec asks a server to repeat its structured content as
		// text, and the model gets the text alone, not the same twice;
		// a server that gave no text gets its JSON sent.
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			out.Content = append(out.Content, llm.Text{Text: string(b)})
		}
	}
	return out, nil
}

func isText(c mcp.Content) bool {
	_, ok := c.(*mcp.TextContent)
	return ok
}

// lostConnection reports whether err means the server is gone: the
// connection was closed, or the server hung up mid-call (a crash reads as
// EOF).
func lostConnection(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// imageTypes are the media types the Messages API accepts for images.
var imageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// blocks maps MCP content to tool result content: text to text, images the
// API accepts to images, and everything else to a line of text describing
// it, so the model knows something was there.
func blocks(content []mcp.Content) []llm.Block {
	var out []llm.Block
	for _, c := range content {
		switch c := c.(type) {
		case *mcp.TextContent:
			out = append(out, llm.Text{Text: c.Text})
		case *mcp.ImageContent:
			if imageTypes[c.MIMEType] {
				out = append(out, llm.Image{MediaType: c.MIMEType, Data: base64.StdEncoding.EncodeToString(c.Data)})
			} else {
				out = append(out, llm.Text{Text: fmt.Sprintf("[image omitted: %d bytes of %s, a type the model cannot read]", len(c.Data), orUnknown(c.MIMEType))})
			}
		case *mcp.AudioContent:
			// The Messages API takes no audio.
			out = append(out, llm.Text{Text: fmt.Sprintf("[audio omitted: %d bytes of %s, which the model cannot hear]", len(c.Data), orUnknown(c.MIMEType))})
		case *mcp.ResourceLink:
			out = append(out, llm.Text{Text: describeLink(c)})
		case *mcp.EmbeddedResource:
			out = append(out, embedded(c.Resource))
		default:
			b, _ := json.Marshal(c)
			out = append(out, llm.Text{Text: fmt.Sprintf("[MCP content this client does not read: %s]", llm.Truncate(string(b), 200))})
		}
	}
	return out
}

func describeLink(l *mcp.ResourceLink) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[resource link: %s", l.URI)
	if l.Name != "" {
		fmt.Fprintf(&b, " name=%q", l.Name)
	}
	if l.MIMEType != "" {
		fmt.Fprintf(&b, " type=%s", l.MIMEType)
	}
	if l.Description != "" {
		fmt.Fprintf(&b, " description=%q", l.Description)
	}
	b.WriteString("]")
	return b.String()
}

// embedded maps an embedded resource: its text, or its image, or a note.
func embedded(r *mcp.ResourceContents) llm.Block {
	switch {
	case r == nil:
		return llm.Text{Text: "[empty embedded resource]"}
	case r.Blob == nil:
		return llm.Text{Text: fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text)}
	case imageTypes[r.MIMEType]:
		return llm.Image{MediaType: r.MIMEType, Data: base64.StdEncoding.EncodeToString(r.Blob)}
	case r.MIMEType == "application/pdf":
		// The API reads PDFs as document blocks, in tool results too.
		b, _ := json.Marshal(map[string]any{
			"type":   "document",
			"source": map[string]string{"type": "base64", "media_type": "application/pdf", "data": base64.StdEncoding.EncodeToString(r.Blob)},
			"title":  r.URI,
		})
		return llm.RawBlock{Type: "document", JSON: b}
	default:
		return llm.Text{Text: fmt.Sprintf("[resource %s omitted: %d bytes of %s]", r.URI, len(r.Blob), orUnknown(r.MIMEType))}
	}
}

func orUnknown(mime string) string {
	if mime == "" {
		return "unknown type"
	}
	return mime
}

// ToolName returns the name under which [Server.Register] registers the
// tool named tool of the server named server: "mcp__", the server's name,
// "__" and the tool's name, as Claude Code names MCP tools, with each
// character a tool name cannot hold (outside [a-zA-Z0-9_-]) replaced by
// '_'. A name longer than the API's 64 characters keeps its first 55 and
// ends in '_' and 8 hex digits of a hash of the whole, so that two long
// names stay apart. Permission rules name MCP tools by it: a rule for
// mcp__github__create_issue is a rule for that tool of the server
// [Server.Name] calls github.
func ToolName(server, tool string) string {
	name := cleanName("mcp__"+server+"__"+tool, "")
	if len(name) <= maxName {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:maxName-9] + "_" + hex.EncodeToString(sum[:4])
}

// maxName is the longest tool name the API takes.
const maxName = 64

// cleanName makes s a name of the characters a tool name allows, by
// replacing every other byte with '_'. An empty s becomes empty.
func cleanName(s, empty string) string {
	if s == "" {
		return empty
	}
	b := []byte(s)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}
