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
