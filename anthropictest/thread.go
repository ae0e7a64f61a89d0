package anthropictest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
)

// The message-threads beta (message-threads-2026-08-12) lets the API hold a
// conversation between requests: a request with thread {"type":"create"}
// asks it to keep the conversation and the response under the response's
// id, and one with {"type":"continue","previous_message_id":id} sends only
// what follows that response, which it continues; system and tools are
// the thread's. The server models it as the official SDKs' thread clients
// expect it to behave (their docs and error codes are all there is; the
// API's docs do not describe it):
//
//   - without the beta header, the thread field is refused as unknown;
//   - it holds each complete reply to a threaded request, and nothing of
//     an HTTP error or of a stream cut short;
//   - a continue of an id it does not hold is 404 thread_not_found, of one
//     already continued 400 thread_already_continued, and of one another
//     request is continuing 400 thread_continue_in_flight; a continue
//     that fails leaves the id free to continue again.
//
// A continued request's Params.Prompt holds the whole conversation, and
// strict mode checks that.

// A thread is a request's thread field.
type thread struct {
	Type              string `json:"type"`
	PreviousMessageID string `json:"previous_message_id"`
}

const betaThreads = "message-threads-2026-08-12"

// The API's messages for a continue it cannot take, as the SDK's docs give
// them, and for a type it does not know, as pydantic words it.
const (
	msgThreadType      = "Input tag '%s' found using 'type' does not match any of the expected tags: 'create', 'continue'"
	msgThreadNotFound  = "No usable Thread state was found for `previous_message_id`. Replay the full conversation with `thread: {\"type\": \"create\"}` to start a new Thread."
	msgThreadContinued = "The response that `previous_message_id` names has already been continued, and each response can be continued only once. Continue from the Thread's most recent response `id`."
	msgThreadInFlight  = "Another request is still continuing from the same `previous_message_id`. Wait for it to complete and continue from its response `id`, or replay the full conversation with `thread: {\"type\": \"create\"}`."
)

// held is what the server keeps of a thread under one response's id.
type held struct {
	system   json.RawMessage
	tools    []json.RawMessage
	messages []Message // the whole conversation, that response last
	state    threadState
}

type threadState int

const (
	threadFree threadState = iota
	threadContinuing
	threadContinued
)

// openThread checks r's thread field and claims the response a continue
// names, setting r.held; it returns the API's error, or nil.
func (s *Server) openThread(r *Request) Reply {
	set, err := r.settings()
	if err != nil || set.Thread.Type == "" {
		return nil
	}
	bad := func(status int, code, format string, args ...any) Reply {
		return HTTPError{Status: status, Message: fmt.Sprintf(format, args...), ErrorCode: code}
	}
	if !slices.Contains(r.betas(), betaThreads) {
		return bad(http.StatusBadRequest, "", "thread: Extra inputs are not permitted")
	}
	switch set.Thread.Type {
	case "create":
		return nil
	case "continue":
	default:
		return bad(http.StatusBadRequest, "", "thread.type: "+msgThreadType, set.Thread.Type)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch h := s.threads[set.Thread.PreviousMessageID]; {
	case h == nil:
		return bad(http.StatusNotFound, "thread_not_found", msgThreadNotFound)
	case h.state == threadContinued:
		return bad(http.StatusBadRequest, "thread_already_continued", msgThreadContinued)
	case h.state == threadContinuing:
		return bad(http.StatusBadRequest, "thread_continue_in_flight", msgThreadInFlight)
	default:
		h.state, r.held = threadContinuing, h
	}
	return nil
}

// settleThread, for reply c to r, marks the response r continues as
// continued, or frees it if msg, the Message c sends, is nil, and holds
// msg under its id.
func (s *Server) settleThread(r *Request, c *call, msg []byte) {
	c.settled = true
	var next *held
	var id string
	if p, err := r.full(); err == nil && msg != nil {
		reply, _ := decodeObject(msg)
		content, _, err := decodeContent(json.RawMessage(reply.get("content")))
		if err == nil {
			m := Message{Role: "assistant", Content: content, Text: textOf(content)}
			next = &held{system: p.System, tools: p.Tools, messages: append(slices.Clone(p.Messages), m)}
			id = reply.str("id")
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := r.held; h != nil {
		h.state = threadFree
		if next != nil {
			h.state = threadContinued
		}
	}
	if next != nil {
		if s.threads == nil {
			s.threads = map[string]*held{}
		}
		s.threads[id] = next
	}
}

// full returns r's Params as the model reads them: for a request that
// continues a thread, with the thread's system, tools and messages before
// its own.
func (r *Request) full() (*Params, error) {
	p, err := r.Params()
	if err != nil || r.held == nil {
		return p, err
	}
	q := *p
	q.System, q.Tools = r.held.system, r.held.tools
	q.Messages = append(slices.Clone(r.held.messages), p.Messages...)
	return &q, nil
}
