package llm_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/bedrock"
	"github.com/agentloop/agentloop/llm/foundry"
	"github.com/agentloop/agentloop/llm/vertex"
)

// anthropicKey is the Anthropic API key each test's client is given: it
// must never reach another platform.
const anthropicKey = "sk-ant-api03-must-not-leave"

// platforms are the SDK's real platform adaptations, offline: each with
// fake credentials, the path it must send a claude-sonnet-4-5 stream to,
// and the credential it must send.
var platforms = []struct {
	name       string
	platform   func(t *testing.T) *llm.Platform
	path, auth string // auth: the start of the header that carries the credential, "Name: value"
	body       string // what the body must hold
}{
	{"bedrock", func(t *testing.T) *llm.Platform {
		creds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "secret"}, nil
		})
		p, err := bedrock.New(t.Context(), bedrock.Config{AWS: &aws.Config{Region: "us-east-1", Credentials: creds}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}, "/model/global.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke-with-response-stream",
		"Authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/",
		`"anthropic_version":"bedrock-2023-05-31"`}, // an ARN-versioned model's
	{"vertex", func(t *testing.T) *llm.Platform {
		creds := &google.Credentials{TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "ya29.example"})}
		p, err := vertex.New(t.Context(), vertex.Config{Region: "us-east5", ProjectID: "proj", Credentials: creds})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}, "/v1/projects/proj/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict",
		"Authorization: Bearer ya29.example", `"anthropic_version":`},
	{"foundry", func(t *testing.T) *llm.Platform {
		p, err := foundry.New(foundry.Config{Resource: "res", APIKey: "foundry-key"})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}, "/v1/messages", "X-Api-Key: foundry-key", `"model":"claude-sonnet-4-5"`},
}

// TestPlatforms drives each platform's SDK middleware against the fake's
// route for it: a streamed tool call, a 429 retried, and an error in mid
// stream, with the platform's credential and never the Anthropic key.
func TestPlatforms(t *testing.T) {
	for _, p := range platforms {
		t.Run(p.name, func(t *testing.T) {
			srv := anthropictest.NewServer(
				anthropictest.NewStream().Text("Adding.").ToolUse("toolu_1", "add", `{"a":`, `1}`).Stop("tool_use"),
				anthropictest.HTTPError{Status: 429, Message: "slow down", RetryAfter: time.Millisecond},
				anthropictest.NewStream().Text("Done."),
				anthropictest.NewStream().Text("Hal").ErrorEvent("api_error", "Internal server error"),
			)
			t.Cleanup(srv.Close)
			c := llm.New(llm.Config{APIKey: anthropicKey, BaseURL: srv.URL, Platform: p.platform(t)})
			req := llm.Request{Model: "claude-sonnet-4-5", MaxTokens: 100,
				Messages: []llm.Message{{Role: llm.User, Content: []llm.Block{llm.Text{Text: "1+0?"}}}},
				Tools:    []llm.ToolSpec{{Name: "add", InputSchema: []byte(`{"type":"object"}`)}}}

			turn, err := collect(t, c, req)
			if err != nil {
				t.Fatal(err)
			}
			want := []llm.Block{llm.Text{Text: "Adding."}, llm.ToolUse{ID: "toolu_1", Name: "add", Input: []byte(`{"a":1}`)}}
			if diff := cmp.Diff(want, turn.Message.Content, cmp.Comparer(sameBlock)); diff != "" {
				t.Errorf("first turn (-want +got):\n%s", diff)
			}
			if turn, err = collect(t, c, req); err != nil { // after the 429
				t.Fatalf("after a 429: %v", err)
			}
			if got := turn.Message.Content; len(got) != 1 || got[0].(llm.Text).Text != "Done." {
				t.Errorf("after a 429, got %v", got)
			}
			_, err = collect(t, c, req)
			var ae *llm.APIError
			if !errors.As(err, &ae) || !strings.Contains(ae.Message, "Internal server error") || !llm.IsRetryable(err) || ae.RequestID == "" {
				t.Errorf("mid-stream error: got %v (retryable %v), want the stream's error, retryable, with its request id", err, llm.IsRetryable(err))
			}

			// count_tokens: the platform's route, or none (memory then estimates).
			var counted *anthropictest.Request
			srv.CountTokens = func(r *anthropictest.Request) int { counted = r; return 7 }
			n, err := c.CountTokens(t.Context(), req)
			switch {
			case p.name == "bedrock":
				if !errors.Is(err, errors.ErrUnsupported) || counted != nil {
					t.Errorf("CountTokens on Bedrock: %d, %v; want ErrUnsupported, and no request", n, err)
				}
			case err != nil || n != 7:
				t.Errorf("CountTokens: %d, %v", n, err)
			case strings.Contains(fmt.Sprint(counted.Header), anthropicKey):
				t.Errorf("count_tokens sent the Anthropic key")
			case p.name == "vertex" && !strings.HasSuffix(counted.Path, "/models/count-tokens:rawPredict"):
				t.Errorf("count_tokens went to %s", counted.Path)
			}

			reqs := srv.Requests()
			if len(reqs) != 4 {
				t.Fatalf("got %d requests, want 4", len(reqs))
			}
			name, value, _ := strings.Cut(p.auth, ": ")
			for _, r := range reqs {
				if r.Path != p.path {
					t.Errorf("request %d went to %s, want %s", r.N, r.Path, p.path)
				}
				if !strings.HasPrefix(r.Header.Get(name), value) {
					t.Errorf("request %d: %s is %q, want %q…", r.N, name, r.Header.Get(name), value)
				}
				for k, vs := range r.Header {
					if strings.Contains(strings.Join(vs, " "), anthropicKey) {
						t.Errorf("request %d sent the Anthropic key in %s", r.N, k)
					}
				}
				if !strings.Contains(string(r.Body), p.body) {
					t.Errorf("request %d: the body lacks %s: %s", r.N, p.body, r.Body)
				}
				if strings.Contains(string(r.Body), anthropicKey) {
					t.Errorf("request %d sent the Anthropic key in its body", r.N)
				}
				if err := anthropictest.CheckRequest(r.Body); err != nil {
					t.Errorf("request %d: %v", r.N, err)
				}
			}
		})
	}
}

// collect streams req and assembles the turn.
func collect(t *testing.T, c *llm.Client, req llm.Request) (llm.Turn, error) {
	t.Helper()
	var a llm.Assembler
	for ev, err := range c.Stream(t.Context(), req) {
		if err != nil {
			return llm.Turn{}, err
		}
		a.Add(ev)
	}
	return a.Turn(), nil
}

func sameBlock(a, b llm.Block) bool {
	if x, ok := a.(llm.ToolUse); ok {
		y, ok := b.(llm.ToolUse)
		return ok && x.ID == y.ID && x.Name == y.Name && string(x.Input) == string(y.Input)
	}
	return cmp.Equal(a, b)
}
