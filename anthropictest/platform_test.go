package anthropictest

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestPlatformRules checks that a platform's route refuses a body the
// platform would, in the platform's error shape.
func TestPlatformRules(t *testing.T) {
	srv := NewServer(Repeat(NewStream().Text("ok")))
	t.Cleanup(srv.Close)
	vertexPath := "/v1/projects/p/locations/global/publishers/anthropic/models/claude-sonnet-4-5:rawPredict"
	msgs := `"max_tokens":10,"messages":[{"role":"user","content":"hi"}]`
	for _, tt := range []struct {
		name, path, body string
		status           int
		want             string // in the body
		errType          string // x-amzn-ErrorType's start
	}{
		{"bedrock ok", "/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke", `{"anthropic_version":"bedrock-2023-05-31",` + msgs + `}`, 200, `"model":"us.anthropic.claude-sonnet-4-5-20250929-v1:0"`, ""},
		{"bedrock model in body", "/model/m/invoke", `{"anthropic_version":"bedrock-2023-05-31","model":"m",` + msgs + `}`, 400, `{"message":"extraneous key [model] is not permitted`, "ValidationException:"},
		{"bedrock stream in body", "/model/m/invoke-with-response-stream", `{"anthropic_version":"bedrock-2023-05-31","stream":true,` + msgs + `}`, 400, "extraneous key [stream]", "ValidationException:"},
		{"bedrock no version", "/model/m/invoke", `{` + msgs + `}`, 400, "anthropic_version: field required", "ValidationException:"},
		{"vertex ok", vertexPath, `{"anthropic_version":"vertex-2023-10-16",` + msgs + `}`, 200, `"model":"claude-sonnet-4-5"`, ""},
		{"vertex model in body", vertexPath, `{"anthropic_version":"vertex-2023-10-16","model":"x",` + msgs + `}`, 400, "the model goes in the URL", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL+tt.path, "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status || !strings.Contains(string(body), tt.want) {
				t.Errorf("got %d %s, want %d with %s", resp.StatusCode, body, tt.status, tt.want)
			}
			if got := resp.Header.Get("X-Amzn-Errortype"); !strings.HasPrefix(got, tt.errType) {
				t.Errorf("x-amzn-ErrorType is %q, want %q…", got, tt.errType)
			}
		})
	}
	for _, r := range srv.Requests() {
		if r.Platform == "" {
			t.Errorf("request %d to %s has no Platform", r.N, r.Path)
		}
	}
}

// TestLocal checks the local model server's answers: no count_tokens, a
// 400 naming a field beyond the API's core, the script otherwise.
func TestLocal(t *testing.T) {
	srv := NewServer(NewStream().Text("ok"))
	srv.Local = true
	t.Cleanup(srv.Close)
	msgs := `"model":"llama3","max_tokens":10,"messages":[{"role":"user","content":"hi"}]`
	for _, tt := range []struct {
		path, body string
		status     int
		want       string
	}{
		{"/v1/messages/count_tokens", `{` + msgs + `}`, 404, "not_found_error"},
		{"/v1/messages", `{` + msgs + `,"context_management":{"edits":[]},"output_config":{}}`, 400, "unknown fields: [context_management output_config]"},
		{"/v1/messages", `{` + msgs + `}`, 200, `"text":"ok"`},
	} {
		resp, err := http.Post(srv.URL+tt.path, "application/json", strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status || !strings.Contains(string(body), tt.want) {
			t.Errorf("%s: got %d %s, want %d with %s", tt.path, resp.StatusCode, body, tt.status, tt.want)
		}
	}
}
