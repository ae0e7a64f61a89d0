package cli

import (
	"context"
	"flag"
	"slices"
	"strings"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/bedrock"
	"github.com/agentloop/agentloop/llm/foundry"
)

// The --provider flag and Claude Code's variables choose where the model
// runs: the Anthropic API (or ANTHROPIC_BASE_URL's server), Amazon Bedrock,
// Vertex AI or Microsoft Foundry. Each platform authenticates its own way;
// the Anthropic key is never sent there.

// A provider is one of --provider's values and Claude Code's variables for it.
type provider struct{ name, use, baseURL, skipAuth string }

// providers are --provider's values, each with Claude Code's variables:
// the one that chooses it, the one that replaces its endpoint, and the one
// that turns its authentication off, for a gateway that authenticates.
var providers = []provider{
	{"anthropic", "", "", ""},
	{"bedrock", "CLAUDE_CODE_USE_BEDROCK", "ANTHROPIC_BEDROCK_BASE_URL", "CLAUDE_CODE_SKIP_BEDROCK_AUTH"},
	{"vertex", "CLAUDE_CODE_USE_VERTEX", "ANTHROPIC_VERTEX_BASE_URL", "CLAUDE_CODE_SKIP_VERTEX_AUTH"},
	{"foundry", "CLAUDE_CODE_USE_FOUNDRY", "ANTHROPIC_FOUNDRY_BASE_URL", "CLAUDE_CODE_SKIP_FOUNDRY_AUTH"},
}

// defineProviderFlag defines --provider; run checks its value.
func defineProviderFlag(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.provider, "provider", "", "")
}

// vertexPlatform makes the Vertex AI platform: nil unless built with
// -tags vertex (provider_vertex.go), since the SDK's vertex package links
// Google's API transport and gRPC, about 30 MB of binary.
var vertexPlatform func(ctx context.Context, region, project string, skipAuth bool) (*llm.Platform, error)

// platform returns the platform the flags and environment choose, nil for
// the Anthropic API, and the base URL that replaces the platform's own.
// A missing or wrong setting is a usage error naming the variable.
func (c *cli) platform(ctx context.Context, o *options) (p *llm.Platform, baseURL string, err error) {
	i := slices.IndexFunc(providers, func(pr provider) bool { return pr.name == o.provider })
	if o.provider == "" {
		i = 0
		var chosen []string
		for j, pr := range providers[1:] {
			on, err := truthy(pr.use, c.getenv(pr.use))
			if err != nil {
				return nil, "", err
			}
			if on {
				chosen, i = append(chosen, pr.use), j+1
			}
		}
		if len(chosen) > 1 {
			return nil, "", usageError("%s are all set: set one, or choose with --provider", strings.Join(chosen, " and "))
		}
	}
	switch {
	case i < 0:
		return nil, "", usageError("--provider must be anthropic, bedrock, vertex or foundry, not %q", o.provider)
	case i == 0:
		return nil, "", nil
	}
	pr := providers[i]
	baseURL = c.getenv(pr.baseURL)
	if err := checkURL(pr.baseURL, baseURL); err != nil {
		return nil, "", err
	}
	skip, err := truthy(pr.skipAuth, c.getenv(pr.skipAuth))
	if err != nil {
		return nil, "", err
	}
	switch pr.name {
	case "bedrock":
		region := c.getenv("AWS_REGION")
		if region == "" {
			return nil, "", usageError("Amazon Bedrock needs a region: set AWS_REGION, such as us-east-1")
		}
		// A Bedrock API key is the model's credential, as ANTHROPIC_API_KEY
		// is: kept from bash and out of every log.
		token := c.getenv("AWS_BEARER_TOKEN_BEDROCK")
		o.secrets, o.builtin.secretEnv = append(o.secrets, token), append(o.builtin.secretEnv, "AWS_BEARER_TOKEN_BEDROCK")
		p, err = bedrock.New(ctx, bedrock.Config{Region: region, Profile: c.getenv("AWS_PROFILE"), BearerToken: token, SkipAuth: skip})
		if err != nil {
			return nil, "", usageError("%v (the AWS credentials come from AWS_PROFILE, the AWS_* variables, ~/.aws or AWS_BEARER_TOKEN_BEDROCK)", err)
		}
	case "vertex":
		project, region := c.getenv("ANTHROPIC_VERTEX_PROJECT_ID"), c.getenv("CLOUD_ML_REGION")
		switch {
		case project == "":
			return nil, "", usageError("Vertex AI needs a project: set ANTHROPIC_VERTEX_PROJECT_ID")
		case region == "":
			return nil, "", usageError("Vertex AI needs a region: set CLOUD_ML_REGION, such as global or us-east5")
		case vertexPlatform == nil:
			return nil, "", usageError("this agentloop is built without Vertex AI, whose Google libraries add 30 MB: " +
				"go install -tags vertex github.com/agentloop/agentloop/cmd/agentloop@latest")
		}
		if p, err = vertexPlatform(ctx, region, project, skip); err != nil {
			return nil, "", usageError("%v", err)
		}
	case "foundry":
		key := c.getenv("ANTHROPIC_FOUNDRY_API_KEY")
		o.secrets = append(o.secrets, key) // out of every log; bash never gets ANTHROPIC_*
		if key == "" && !skip {
			return nil, "", usageError("Microsoft Foundry needs a key: set ANTHROPIC_FOUNDRY_API_KEY (agentloop does not sign in with Microsoft Entra ID)")
		}
		if p, err = foundry.New(foundry.Config{Resource: c.getenv("ANTHROPIC_FOUNDRY_RESOURCE"), BaseURL: baseURL, APIKey: key, SkipAuth: skip}); err != nil {
			return nil, "", usageError("%v", err)
		}
		baseURL = "" // the endpoint foundry.Config took
	}
	if err := o.fitPlatform(p); err != nil {
		return nil, "", err
	}
	return p, baseURL, nil
}

// fitPlatform checks the model and --compaction against p, and leaves
// compaction to the client where p lacks the server's.
func (o *options) fitPlatform(p *llm.Platform) error {
	if p.Model != nil {
		if _, err := p.Model(o.model); err != nil {
			return usageError("--model %s: %v", o.model, err)
		}
	}
	if p.NoSummarize {
		switch o.compaction {
		case "server":
			return usageError("--compaction server: %s does not compact on the server; use --compaction client", p.Name)
		case "":
			o.compaction = "client"
		}
	}
	o.platform = p
	return nil
}

// counter returns how memory counts tokens exactly: client's count_tokens,
// or nil, the estimate, on a platform without the route.
func (o *options) counter(client *llm.Client) func(context.Context, llm.Request) (int, error) {
	if o.platform != nil && o.platform.NoCountTokens {
		return nil
	}
	return client.CountTokens
}

// truthy reads a Claude Code switch: 1, true, yes or on; 0, false, no, off
// or empty; anything else is a usage error naming the variable.
func truthy(name, v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true, nil
	case "", "0", "false", "no", "off":
		return false, nil
	}
	return false, usageError("%s=%q: set it to 1 (on) or 0 (off)", name, v)
}
