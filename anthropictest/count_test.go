package anthropictest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCountTokens checks the count_tokens endpoint: its answer and
// headers, the request CountTokens sees, and that it leaves the messages
// script alone.
func TestCountTokens(t *testing.T) {
	const body = `{"model":"m","messages":[{"role":"user","content":"What is 1+1?"}]}`
	tests := []struct {
		name  string
		count func(r *Request) int
		want  int
	}{
		{name: "default estimate", want: len(body) / 4},
		{name: "function of the request", count: func(r *Request) int {
			return len(r.Messages()) * 1000
		}, want: 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := NewServer(NewStream().Text("2").Stop("end_turn"))
			defer srv.Close()
			var counts []*Request // one request at a time: no lock
			if tt.count != nil {
				srv.CountTokens = func(r *Request) int {
					counts = append(counts, r)
					return tt.count(r)
				}
			}
			client := newClient(t)
			for i := range 2 {
				req, _ := http.NewRequest("POST", srv.URL+"/v1/messages/count_tokens?beta=true", strings.NewReader(body))
				req.Header.Set("X-Api-Key", "test")
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var got struct {
					InputTokens int `json:"input_tokens"`
				}
				if err := json.Unmarshal(raw, &got); err != nil || got.InputTokens != tt.want {
					t.Errorf("count %d: body %s, want input_tokens %d", i+1, raw, tt.want)
				}
				wantHeader := map[string]string{
					"Status":       "200",
					"Content-Type": "application/json",
					"Request-Id":   fmt.Sprintf("req_anthropictest_count%010d", i+1),
				}
				gotHeader := map[string]string{
					"Status":       resp.Status[:3],
					"Content-Type": resp.Header.Get("Content-Type"),
					"Request-Id":   resp.Header.Get("Request-Id"),
				}
				if diff := cmp.Diff(wantHeader, gotHeader); diff != "" {
					t.Errorf("count %d: response (-want +got):\n%s", i+1, diff)
				}
			}
			if n, p := len(srv.Requests()), srv.pending(); n != 0 || p != 1 {
				t.Errorf("after counting: %d messages requests, %d pending; want 0, 1", n, p)
			}
			if tt.count != nil {
				if len(counts) != 2 {
					t.Fatalf("CountTokens saw %d requests, want 2", len(counts))
				}
				c := counts[1]
				if c.N != 2 || c.Path != "/v1/messages/count_tokens" || c.Query != "beta=true" ||
					string(c.Body) != body || c.Header.Get("X-Api-Key") != "test" {
					t.Errorf("CountTokens saw %+v", c)
				}
			}
			// The scripted reply is still there for the next turn (the body
			// asks for no stream: it comes whole).
			resp, err := client.Post(srv.URL+"/v1/messages", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			raw, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 || !strings.Contains(string(raw), `"content":[{"type":"text","text":"2"}]`) {
				t.Errorf("messages after counting: status %d, %v, body %s", resp.StatusCode, err, raw)
			}
			if r := srv.Requests(); len(r) != 1 || r[0].N != 1 {
				t.Errorf("after the turn: %d requests (first N %d)", len(r), r[0].N)
			}
		})
	}
}

// TestCountTokensNotFound checks that only POST reaches count_tokens.
func TestCountTokensNotFound(t *testing.T) {
	srv := NewServer()
	defer srv.Close()
	counted := 0 // one request at a time: no lock
	srv.CountTokens = func(*Request) int { counted++; return 1 }
	resp, err := newClient(t).Get(srv.URL + "/v1/messages/count_tokens")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 || counted != 0 {
		t.Errorf("GET: status %d, %d counted; want 404, 0", resp.StatusCode, counted)
	}
}
