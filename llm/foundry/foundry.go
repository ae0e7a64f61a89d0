// Package foundry sends an [llm.Client]'s requests to Claude on Microsoft
// Foundry, through the Anthropic SDK's own foundry package, which serves
// the Anthropic API under https://RESOURCE.services.ai.azure.com/anthropic/.
// The Anthropic API key is never sent: Foundry's own key is.
//
//	p, err := foundry.New(foundry.Config{Resource: "my-resource", APIKey: key})
//	client := llm.New(llm.Config{Platform: p})
//
// A model is named by its Foundry deployment, which defaults to the model's
// id, so the name is sent as it is.
package foundry

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/anthropics/anthropic-sdk-go/v2/foundry"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/agentloop/agentloop/llm"
)

// Config says where and how to reach Foundry. Exactly one of Resource and
// BaseURL, and at most one of APIKey and TokenProvider, must be set.
type Config struct {
	Resource string // ANTHROPIC_FOUNDRY_RESOURCE: the name in RESOURCE.services.ai.azure.com
	BaseURL  string // ANTHROPIC_FOUNDRY_BASE_URL: the endpoint, ending in /anthropic
	APIKey   string // ANTHROPIC_FOUNDRY_API_KEY, sent as x-api-key
	// TokenProvider returns a Microsoft Entra ID token for the scope
	// https://ai.azure.com/.default, sent as a bearer token; it is called
	// for every attempt, so it should cache.
	TokenProvider func(ctx context.Context) (string, error)
	// SkipAuth sends neither, for a gateway that authenticates requests.
	SkipAuth bool
}

// New returns the Foundry platform for cfg, for [llm.Config].Platform.
func New(cfg Config) (*llm.Platform, error) {
	switch {
	case cfg.Resource == "" && cfg.BaseURL == "":
		return nil, errors.New("foundry: no endpoint: set Config.Resource (ANTHROPIC_FOUNDRY_RESOURCE) or Config.BaseURL (ANTHROPIC_FOUNDRY_BASE_URL)")
	case cfg.Resource != "" && cfg.BaseURL != "":
		return nil, errors.New("foundry: Config.Resource (ANTHROPIC_FOUNDRY_RESOURCE) and Config.BaseURL (ANTHROPIC_FOUNDRY_BASE_URL) both set: set one")
	case cfg.SkipAuth:
		// The SDK wants a credential: one that keyless takes off again.
		cfg.APIKey, cfg.TokenProvider = "skip", nil
	case cfg.APIKey == "" && cfg.TokenProvider == nil:
		return nil, errors.New("foundry: no credentials: set Config.APIKey (ANTHROPIC_FOUNDRY_API_KEY) or Config.TokenProvider")
	}
	c, err := foundry.NewClient(foundry.ClientConfig{APIKey: cfg.APIKey, AzureADTokenProvider: cfg.TokenProvider,
		Resource: cfg.Resource, BaseURL: cfg.BaseURL}, skip(cfg.SkipAuth)...)
	if err != nil {
		return nil, fmt.Errorf("foundry: %w", err)
	}
	return &llm.Platform{Name: "Microsoft Foundry", Options: c.Options}, nil
}

// skip returns the option that sends a request without the key, if on.
func skip(on bool) []option.RequestOption {
	if !on {
		return nil
	}
	return []option.RequestOption{option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		r.Header.Del("X-Api-Key")
		return next(r)
	})}
}
