package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/vertex"
)

// The tests reach Vertex AI as a -tags vertex build does.
func init() {
	if vertexPlatform == nil {
		vertexPlatform = func(ctx context.Context, region, project string, skipAuth bool) (*llm.Platform, error) {
			return vertex.New(ctx, vertex.Config{Region: region, ProjectID: project, SkipAuth: skipAuth})
		}
	}
}

// TestProviderSettings checks that a missing or wrong platform setting is
// a usage error naming what to set, before any request.
func TestProviderSettings(t *testing.T) {
	bedrock := map[string]string{"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "us-east-1", "CLAUDE_CODE_SKIP_BEDROCK_AUTH": "1"}
	with := func(base map[string]string, kv ...string) map[string]string {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			env[kv[i]] = kv[i+1]
		}
		return env
	}
	for _, tt := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"bedrock without region", with(bedrock, "AWS_REGION", ""), nil, "set AWS_REGION"},
		{"switch not a boolean", with(bedrock, "CLAUDE_CODE_USE_BEDROCK", "maybe"), nil, `CLAUDE_CODE_USE_BEDROCK="maybe"`},
		{"two platforms", with(bedrock, "CLAUDE_CODE_USE_VERTEX", "true"), nil, "CLAUDE_CODE_USE_BEDROCK and CLAUDE_CODE_USE_VERTEX are all set"},
		{"bedrock base URL", with(bedrock, "ANTHROPIC_BEDROCK_BASE_URL", "localhost:8080"), nil, `ANTHROPIC_BEDROCK_BASE_URL "localhost:8080"`},
		{"bedrock unknown model", bedrock, []string{"--model", "gpt-5"}, `--model gpt-5: bedrock: model "gpt-5" is not one agentloop knows on Amazon Bedrock`},
		{"bedrock server compaction", bedrock, []string{"--compaction", "server"}, "--compaction server: Amazon Bedrock does not compact on the server"},
		{"vertex without project", map[string]string{"CLAUDE_CODE_USE_VERTEX": "1", "CLOUD_ML_REGION": "global"}, nil, "set ANTHROPIC_VERTEX_PROJECT_ID"},
		{"vertex without region", map[string]string{"CLAUDE_CODE_USE_VERTEX": "1", "ANTHROPIC_VERTEX_PROJECT_ID": "p"}, nil, "set CLOUD_ML_REGION"},
		{"foundry without key", map[string]string{"CLAUDE_CODE_USE_FOUNDRY": "1", "ANTHROPIC_FOUNDRY_RESOURCE": "r"}, nil, "set ANTHROPIC_FOUNDRY_API_KEY"},
		{"foundry without resource", map[string]string{"CLAUDE_CODE_USE_FOUNDRY": "1", "ANTHROPIC_FOUNDRY_API_KEY": "k"}, nil, "ANTHROPIC_FOUNDRY_RESOURCE"},
		{"unknown provider", nil, []string{"--provider", "azure"}, "--provider must be anthropic, bedrock, vertex or foundry"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			for k, v := range tt.env {
				h.env[k] = v
			}
			r := h.run(strings.NewReader(""), append(tt.args, "--tools", "none", "hi")...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d naming %q", r.code, r.stderr, exitUsage, tt.want)
			}
			if n := len(h.srv.Requests()); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}

// TestProviders runs the command on each platform, chosen by Claude
// Code's variables or --provider, against the fake's route for it: the
// platform's credential goes, the Anthropic key does not.
func TestProviders(t *testing.T) {
	for _, tt := range []struct {
		name       string
		env        map[string]string
		args       []string
		path, auth string // auth: "Name: value" the request must carry; "Name: " for none
	}{
		{"bedrock", map[string]string{"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "us-east-1",
			"AWS_BEARER_TOKEN_BEDROCK": "bedrock-api-key-0123", "ANTHROPIC_BEDROCK_BASE_URL": "URL"}, nil,
			"/model/global.anthropic.claude-sonnet-5-5/invoke-with-response-stream", "Authorization: Bearer bedrock-api-key-0123"},
		{"bedrock by flag, haiku 4.5, unsigned", map[string]string{"AWS_REGION": "eu-west-1", "CLAUDE_CODE_SKIP_BEDROCK_AUTH": "1",
			"ANTHROPIC_BEDROCK_BASE_URL": "URL"}, []string{"--provider", "bedrock", "--model", "claude-haiku-4-5"},
			"/model/global.anthropic.claude-haiku-4-5-20251001-v1:0/invoke-with-response-stream", "Authorization: "},
		{"vertex", map[string]string{"CLAUDE_CODE_USE_VERTEX": "1", "ANTHROPIC_VERTEX_PROJECT_ID": "proj", "CLOUD_ML_REGION": "global",
			"CLAUDE_CODE_SKIP_VERTEX_AUTH": "1", "ANTHROPIC_VERTEX_BASE_URL": "URL"}, nil,
			"/v1/projects/proj/locations/global/publishers/anthropic/models/claude-sonnet-5-5:streamRawPredict", "Authorization: "},
		{"foundry", map[string]string{"CLAUDE_CODE_USE_FOUNDRY": "1", "ANTHROPIC_FOUNDRY_API_KEY": "foundry-key-0123",
			"ANTHROPIC_FOUNDRY_BASE_URL": "URL"}, nil, "/v1/messages", "X-Api-Key: foundry-key-0123"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, anthropictest.NewStream().Text("Hello from the cloud."))
			for k, v := range tt.env {
				h.env[k] = strings.Replace(v, "URL", h.srv.URL, 1)
			}
			r := h.run(strings.NewReader(""), append(tt.args, "--tools", "none", "hi")...)
			if r.code != exitOK || r.stdout != "Hello from the cloud.\n" {
				t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
			reqs := h.srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			req := reqs[0]
			if req.Path != tt.path {
				t.Errorf("path %s, want %s", req.Path, tt.path)
			}
			name, value, _ := strings.Cut(tt.auth, ": ")
			if got := req.Header.Get(name); got != value {
				t.Errorf("%s: %q, want %q", name, got, value)
			}
			for k, vs := range req.Header {
				if strings.Contains(strings.Join(vs, " "), testKey) {
					t.Errorf("the Anthropic key went to %s in %s", tt.name, k)
				}
			}
			if strings.Contains(string(req.Body), testKey) {
				t.Errorf("the Anthropic key went to %s in the body", tt.name)
			}
		})
	}
}

// TestLocalServer runs the command against a local model server's
// Anthropic-compatible API (Ollama, llama-server, vLLM): a model agentloop
// does not know, no count_tokens route, and a 400 for any field beyond
// the API's core. The run sends none: no context management, no thinking
// unasked, and its cost is unknown.
func TestLocalServer(t *testing.T) {
	h := newHarness(t, anthropictest.NewStream().Text("Hi from qwen."))
	h.srv.Local = true
	r := h.run(strings.NewReader(""), "--model", "qwen3-coder:30b", "--context-limit", "30000",
		"--tools", "files", "--output-format", "json", "hi")
	if r.code != exitOK || !strings.Contains(r.stdout, `"result":"Hi from qwen."`) {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, `"total_cost_usd":null`) {
		t.Errorf("a cost for a model without a price: %s", r.stdout)
	}
	if !strings.Contains(r.stderr, `model "qwen3-coder:30b" is not one agentloop knows`) {
		t.Errorf("no warning of the unknown model: %q", r.stderr)
	}
	body := string(h.srv.Requests()[0].Body)
	for _, field := range []string{`"thinking"`, `"context_management"`, `"output_config"`} {
		if strings.Contains(body, field) {
			t.Errorf("the request sent %s: %s", field, body)
		}
	}
}

// TestBedrockKeyNotInBash: on Bedrock, a Bedrock API key is the model's
// credential, kept from bash as the Anthropic key is.
func TestBedrockKeyNotInBash(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-SECRET-0123")
	t.Setenv("HARMLESS", "visible")
	h := newHarness(t,
		anthropictest.NewStream().Usage(10, 0, 0, 0).ToolUse("toolu_1", "bash", `{"command":"env"}`).Stop("tool_use", 5),
		anthropictest.NewStream().Text("done"))
	for k, v := range map[string]string{"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "us-east-1",
		"AWS_BEARER_TOKEN_BEDROCK": "bedrock-SECRET-0123", "ANTHROPIC_BEDROCK_BASE_URL": h.srv.URL} {
		h.env[k] = v
	}
	h.run(strings.NewReader(""), "--yes", "--sandbox", "off", "show the environment").check(t, 0)
	res := h.srv.Requests()[1].ToolResults()
	if len(res) != 1 || res[0].IsError {
		t.Fatalf("tool_results %+v", res)
	}
	out := res[0].Content[0].Text
	if !strings.Contains(out, "HARMLESS=visible") || strings.Contains(out, "bedrock-SECRET") {
		t.Errorf("bash's environment, which must have HARMLESS and not the Bedrock key:\n%s", out)
	}
}
