package anthropictest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

// TestThreadSDK runs the official SDK's message-thread client against the
// fake: the first turn creates the thread, each later one sends only its
// new messages; each request passes CheckRequest, and the server reads the
// whole conversation.
func TestThreadSDK(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	type seen struct {
		Thread         string
		Sent, Prompted int
		System         string
	}
	var got []seen // one request at a time: no lock
	replies := []*Stream{
		NewStream().Text("Adding.").ToolUse("toolu_1", "add", `{"a":1,"b":1}`),
		NewStream().Text("It is 2."),
		NewStream().Text("You're welcome."),
	}
	srv := NewServer(Repeat(ReplyFunc(func(r *Request) Reply {
		p, err := r.Params()
		if err != nil {
			t.Errorf("request %d: %v", r.N, err)
			return nil
		}
		var th struct{ Thread map[string]string }
		json.Unmarshal(r.Body, &th)
		got = append(got, seen{th.Thread["type"] + " " + th.Thread["previous_message_id"], len(p.Messages), len(p.Prompt), string(p.System)})
		return replies[r.N-1]
	})))
	defer srv.Close()
	client := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
	ctx := context.Background()
	th := client.Beta.Messages.NewThread(anthropic.BetaMessageThreadCreateParams{
		Model: "claude-opus-5-5", MaxTokens: 100,
		System:   []anthropic.BetaTextBlockParam{{Text: "Be brief."}},
		Messages: []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("What is 1+1?"))},
	})
	first, err := th.Send(ctx, anthropic.BetaMessageThreadSendParams{})
	if err != nil {
		t.Fatal(err)
	}
	stream := th.SendStreaming(ctx, anthropic.BetaMessageThreadSendParams{
		Messages: []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaToolResultBlock("toolu_1", "2", false))},
	})
	for stream.Next() {
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	stream.Close()
	second := th.LastMessage()
	third, err := th.Send(ctx, anthropic.BetaMessageThreadSendParams{
		Messages: []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("Thanks."))},
	})
	if err != nil {
		t.Fatal(err)
	}
	if third.Content[0].Text != "You're welcome." {
		t.Errorf("third reply %q", third.Content[0].Text)
	}
	want := []seen{
		{"create ", 1, 1, `[{"text":"Be brief.","type":"text"}]`},
		{"continue " + first.ID, 1, 3, ""}, // the thread's system is held, not sent
		{"continue " + second.ID, 1, 5, ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	for _, r := range srv.Requests() {
		if err := CheckRequest(r.Body); err != nil {
			t.Errorf("request %d: %v", r.N, err)
		}
	}
}

// TestThreadErrors checks the API's refusals of a thread it cannot
// continue, and that a continue whose reply fails leaves the thread free.
func TestThreadErrors(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	srv := NewServer(
		NewStream().Text("one"),                       // 1: creates msg …1
		HTTPError{Status: 529, Message: "Overloaded"}, // 3: continues …1 and fails
		NewStream().Text("two"),                       // 4: continues …1
		NewStream().Text("three").Stall(),             // 7: continues …4, in flight
	)
	defer srv.Close()
	client := newClient(t)
	var stalled *http.Response
	defer func() {
		if stalled != nil {
			stalled.Body.Close()
		}
	}()
	send := func(ctx context.Context, beta bool, thread string) (int, string) {
		t.Helper()
		body := `{"model":"claude-opus-5","max_tokens":10,"stream":true,"thread":{` + thread + `},"messages":[{"role":"user","content":"hi"}]}`
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/messages", strings.NewReader(body))
		if beta {
			req.Header.Set("Anthropic-Beta", "context-1m-2025-08-07, "+betaThreads)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == 200 && strings.Contains(thread, msgID(4)) {
			stalled = resp // its headers came: the thread is claimed
			return resp.StatusCode, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var e struct {
			Error struct {
				Type, Message string
				Details       struct {
					ErrorCode string `json:"error_code"`
				}
			}
		}
		json.Unmarshal(b, &e)
		return resp.StatusCode, strings.TrimSpace(e.Error.Type + " " + e.Error.Details.ErrorCode)
	}
	cont := func(n int) string { return `"type":"continue","previous_message_id":"` + msgID(n) + `"` }
	type result struct {
		Status int
		Error  string
	}
	var got []result
	for _, step := range []struct {
		beta   bool
		thread string
	}{
		{true, `"type":"create"`}, // 1
		{false, cont(1)},          // 2: no beta header
		{true, cont(1)},           // 3: 529
		{true, cont(1)},           // 4: free again after the failure
		{true, cont(1)},           // 5: already continued
		{true, cont(99)},          // 6: not held
		{true, cont(4)},           // 7: stalls
		{true, cont(4)},           // 8: in flight
		{true, `"type":"resume"`}, // 9: no such type
	} {
		status, err := send(context.Background(), step.beta, step.thread)
		got = append(got, result{status, err})
	}
	want := []result{
		{200, ""},
		{400, "invalid_request_error"},
		{529, "overloaded_error"},
		{200, ""},
		{400, "invalid_request_error thread_already_continued"},
		{404, "not_found_error thread_not_found"},
		{200, ""},
		{400, "invalid_request_error thread_continue_in_flight"},
		{400, "invalid_request_error"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replies (-want +got):\n%s", diff)
	}
}
