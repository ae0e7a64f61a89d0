// Package bedrock sends an [llm.Client]'s requests to Claude on Amazon
// Bedrock, through the Anthropic SDK's own bedrock package: it rewrites each
// request to Bedrock's InvokeModel route (/model/ID/invoke-with-response-stream),
// signs it with AWS SigV4 or a Bedrock API key, and turns Bedrock's AWS event
// stream back into server-sent events, which llm reads as from the Anthropic
// API. The Anthropic API key is never sent.
//
//	p, err := bedrock.New(ctx, bedrock.Config{Region: "us-east-1"})
//	client := llm.New(llm.Config{Platform: p})
//
// Models are named as on the Anthropic API ("claude-sonnet-4-5"), mapped to
// Bedrock's inference profiles (global.anthropic.claude-sonnet-4-5-20250929-v1:0),
// or by a Bedrock id, inference profile or ARN, sent as it is.
package bedrock

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2/bedrock"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/tidwall/gjson"

	"github.com/agentloop/agentloop/internal/apirules"
	"github.com/agentloop/agentloop/llm"
)

// Config says where and how to reach Bedrock. The zero value uses the AWS
// SDK's default chain for credentials and region.
type Config struct {
	// Region is the AWS region, such as "us-east-1". Empty takes the AWS
	// configuration's (AWS_REGION, the profile's); one must be found.
	Region string
	// Profile is the shared-config profile to load (AWS_PROFILE). Empty
	// means the default chain's.
	Profile string
	// BearerToken is a Bedrock API key (AWS_BEARER_TOKEN_BEDROCK), sent as
	// a bearer token instead of a SigV4 signature. Empty means AWS
	// credentials.
	BearerToken string
	// SkipAuth sends requests neither signed nor with a token, for a
	// gateway that authenticates them itself. It needs Region (or a
	// BaseURL on the llm.Config).
	SkipAuth bool
	// AWS, if set, is the AWS configuration to use as it is, instead of
	// loading the default chain (which reads the AWS_* environment, the
	// shared config files, SSO and the instance metadata service).
	AWS *aws.Config
}

// New returns the Bedrock platform for cfg, for [llm.Config].Platform. It
// fails when no region is configured, or the AWS configuration does not
// load.
func New(ctx context.Context, cfg Config) (*llm.Platform, error) {
	var ac aws.Config
	switch {
	case cfg.AWS != nil:
		ac = *cfg.AWS
	case cfg.SkipAuth || cfg.BearerToken != "":
		// No credentials to find: nothing to load, nothing to ask IMDS.
	default:
		var opts []func(*config.LoadOptions) error
		if cfg.Profile != "" {
			opts = append(opts, config.WithSharedConfigProfile(cfg.Profile))
		}
		var err error
		if ac, err = config.LoadDefaultConfig(ctx, opts...); err != nil {
			return nil, fmt.Errorf("bedrock: loading the AWS configuration: %w", err)
		}
	}
	if cfg.Region != "" {
		ac.Region = cfg.Region
	}
	if ac.Region == "" {
		return nil, errors.New("bedrock: no AWS region: set Config.Region (AWS_REGION), such as us-east-1")
	}
	if cfg.SkipAuth || cfg.BearerToken != "" {
		// A token that SkipAuth's middleware takes off again.
		ac.BearerAuthTokenProvider = bedrock.NewStaticBearerTokenProvider(cmp.Or(cfg.BearerToken, "skip"))
		ac.AuthSchemePreference = []string{"httpBearerAuth"}
	}
	opts := []option.RequestOption{option.WithMiddleware(legacyVersion), bedrock.WithConfig(ac)}
	if cfg.SkipAuth {
		opts = append(opts, option.WithMiddleware(unauthenticated))
	}
	return &llm.Platform{Name: "Amazon Bedrock", Options: opts, Model: modelFor(ac.Region),
		// Bedrock's CountTokens takes another body, which the SDK does not build.
		NoCountTokens: true,
		// The compaction page lists the Claude API alone.
		NoSummarize: true}, nil
}

// unauthenticated takes the Authorization header off a SkipAuth request:
// registered after the SDK's middleware, it runs after the signing.
func unauthenticated(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	r.Header.Del("Authorization")
	return next(r)
}

// arnVersioned matches the ARN-versioned model ids (such as
// anthropic.claude-sonnet-4-5-20250929-v1:0), which refuse API version
// 2026-10-21 on Bedrock and take bedrock-2023-05-31.
var arnVersioned = regexp.MustCompile(`-v\d+(:\d+)?$`)

// legacyVersion asks for bedrock-2023-05-31 for an ARN-versioned model;
// the SDK's middleware, after it, moves the version into the body.
func legacyVersion(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return next(r)
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if arnVersioned.MatchString(gjson.GetBytes(body, "model").String()) {
		r.Header.Set("anthropic-version", "bedrock-2023-05-31")
	}
	return next(r)
}

// models maps the model table's names (llm.LookupModel) to Bedrock's model
// ids (the Bedrock model catalog, November 2026), without the inference
// profile's prefix. Claude Mythos is not offered on Bedrock.
var models = map[string]string{
	"claude-opus-5-5": "anthropic.claude-opus-5-5", "claude-sonnet-5-5": "anthropic.claude-sonnet-5-5",
	"claude-haiku-5-5": "anthropic.claude-haiku-5-5", "claude-fable-5-1": "anthropic.claude-fable-5-1",
	"claude-fable-5": "anthropic.claude-fable-5", "claude-opus-5": "anthropic.claude-opus-5",
	"claude-sonnet-5": "anthropic.claude-sonnet-5", "claude-opus-4-8": "anthropic.claude-opus-4-8",
	"claude-opus-4-7": "anthropic.claude-opus-4-7", "claude-opus-4-6": "anthropic.claude-opus-4-6-v1",
	"claude-sonnet-4-6": "anthropic.claude-sonnet-4-6",
	"claude-opus-4-5":   "anthropic.claude-opus-4-5-20251101-v1:0",
	"claude-sonnet-4-5": "anthropic.claude-sonnet-4-5-20250929-v1:0",
	"claude-haiku-4-5":  "anthropic.claude-haiku-4-5-20251001-v1:0",
	// No global profile: a geographic one, by the region.
	"claude-opus-4-1":   "anthropic.claude-opus-4-1-20250805-v1:0",
	"claude-opus-4":     "anthropic.claude-opus-4-20250514-v1:0",
	"claude-opus-4-0":   "anthropic.claude-opus-4-20250514-v1:0",
	"claude-sonnet-4":   "anthropic.claude-sonnet-4-20250514-v1:0",
	"claude-sonnet-4-0": "anthropic.claude-sonnet-4-20250514-v1:0",
	"claude-3-5-haiku":  "anthropic.claude-3-5-haiku-20241022-v1:0",
	"claude-3-haiku":    "anthropic.claude-3-haiku-20240307-v1:0",
}

// geographic lists the models that have geographic inference profiles
// only, not the global one.
var geographic = []string{"claude-opus-4-1", "claude-opus-4", "claude-opus-4-0", "claude-sonnet-4",
	"claude-sonnet-4-0", "claude-3-5-haiku", "claude-3-haiku"}

// modelFor returns the Model function for region: a model of the table
// becomes its inference profile, global or region's geography's; a Bedrock
// id, inference profile or ARN is sent as it is.
func modelFor(region string) func(string) (string, error) {
	geo := "us."
	for prefix, g := range map[string]string{"eu-": "eu.", "ap-": "apac.", "ca-": "ca.", "us-gov-": "us-gov."} {
		if strings.HasPrefix(region, prefix) {
			geo = g
		}
	}
	return func(model string) (string, error) {
		if strings.HasPrefix(model, "arn:") || strings.Contains(model, "anthropic.") {
			return model, nil
		}
		name := apirules.Undated(model) // the table's name
		id, ok := models[name]
		switch {
		case !ok:
			return "", fmt.Errorf("bedrock: model %q is not one agentloop knows on Amazon Bedrock (%s): name one of those, or pass a Bedrock model id, inference profile or ARN, such as global.anthropic.claude-sonnet-4-5-20250929-v1:0",
				model, strings.Join(slices.Sorted(maps.Keys(models)), ", "))
		case slices.Contains(geographic, name):
			return geo + id, nil
		}
		return "global." + id, nil
	}
}
