package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/anthropictest"
)

// TestObserve checks Config.Observe: it is told of each HTTP attempt, with
// its number and, on a retry, why and after what wait; it sees the events
// each attempt yields, then how the attempt ended; and the attempt runs
// under the context it returns.
func TestObserve(t *testing.T) {
	type key struct{}
	tests := []struct {
		name    string
		replies []anthropictest.Reply
		stop    bool // the consumer stops after the first event
		want    []string
	}{{
		name: "retried",
		replies: []anthropictest.Reply{
			anthropictest.HTTPError{Status: 529, Type: "overloaded_error", Message: "Overloaded", RetryAfter: time.Millisecond},
			anthropictest.NewStream().Text("hi").Stop("end_turn"),
		},
		want: []string{"attempt 1 <nil> 0s", "end llm: 529 overloaded_error: Overloaded",
			"attempt 2 overloaded_error 1ms", "llm.MessageStart", "llm.TextDelta", "llm.TextDelta", "llm.BlockStop",
			"llm.MessageDelta", "llm.MessageStop", "end <nil>"},
	}, {
		name:    "stopped",
		replies: []anthropictest.Reply{anthropictest.NewStream().Text("hi").Stop("end_turn")},
		stop:    true,
		want:    []string{"attempt 1 <nil> 0s", "llm.MessageStart", "end <nil>"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := anthropictest.NewServer(tt.replies...)
			defer srv.Close()
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			var got []string
			observe := func(ctx context.Context, a Attempt) (context.Context, func(Event, error)) {
				retried := "<nil>"
				if a.Retried != nil {
					retried = ErrorType(a.Retried)
				}
				got = append(got, fmt.Sprintf("attempt %d %s %v", a.N, retried, a.Wait))
				if a.Request.Model != "claude-test" {
					t.Errorf("attempt %d: request for model %q", a.N, a.Request.Model)
				}
				return context.WithValue(ctx, key{}, a.N), func(ev Event, err error) {
					if ev != nil {
						got = append(got, fmt.Sprintf("%T", ev))
						return
					}
					var ae *APIError
					if errors.As(err, &ae) {
						ae.RequestID = "" // the fake's
						err = ae
					}
					got = append(got, fmt.Sprintf("end %v", err))
				}
			}
			var sawCtx bool
			hc := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
				sawCtx = sawCtx || r.Context().Value(key{}) != nil
				return tr.RoundTrip(r)
			})}
			c := New(Config{BaseURL: srv.URL, HTTPClient: hc, Observe: observe})
			for _, err := range c.Stream(t.Context(), Request{Model: "claude-test", Messages: []Message{{Role: User, Content: []Block{Text{Text: "hi"}}}}}) {
				if err != nil {
					t.Fatal(err)
				}
				if tt.stop {
					break
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("observed (-want +got):\n%s", diff)
			}
			if !sawCtx {
				t.Error("no request ran under the context Observe returned")
			}
		})
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
