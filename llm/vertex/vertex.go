// Package vertex sends an [llm.Client]'s requests to Claude on Google
// Vertex AI, through the Anthropic SDK's own vertex package: it moves the
// model into the URL (…/publishers/anthropic/models/MODEL:streamRawPredict)
// and the API version into the body, and authorizes each request with
// Google credentials. The Anthropic API key is never sent.
//
//	p, err := vertex.New(ctx, vertex.Config{Region: "global", ProjectID: "my-project"})
//	client := llm.New(llm.Config{Platform: p})
//
// Models are named as on the Anthropic API ("claude-sonnet-4-5"), mapped to
// Vertex AI's ids (claude-sonnet-4-5@20250929), or by a Vertex AI id
// (with "@"), sent as it is.
//
// The SDK's vertex package links Google's API transport, gRPC with it: about
// 30 MB of binary. The agentloop command includes it only when built with
// -tags vertex.
package vertex

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
	sdkvertex "github.com/anthropics/anthropic-sdk-go/v2/vertex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/agentloop/agentloop/internal/apirules"
	"github.com/agentloop/agentloop/llm"
)

// Config says where and how to reach Vertex AI.
type Config struct {
	// Region is the Vertex AI region (CLOUD_ML_REGION), such as "global",
	// "us-east5" or "europe-west1". Required.
	Region string
	// ProjectID is the Google Cloud project (ANTHROPIC_VERTEX_PROJECT_ID).
	// Required.
	ProjectID string
	// Credentials authorize the requests. Nil means Google's application
	// default credentials, with the cloud-platform scope.
	Credentials *google.Credentials
	// SkipAuth sends requests without credentials, for a gateway that
	// authenticates them itself, with HTTPClient.
	SkipAuth bool
	// HTTPClient sends SkipAuth's requests; nil means http.DefaultClient.
	// Otherwise the llm.Config's HTTPClient sends them, authorized.
	HTTPClient *http.Client
}

// New returns the Vertex AI platform for cfg, for [llm.Config].Platform.
// It fails when Region or ProjectID is missing, or no credentials are
// found.
func New(ctx context.Context, cfg Config) (*llm.Platform, error) {
	switch {
	case cfg.Region == "":
		return nil, errors.New("vertex: no region: set Config.Region (CLOUD_ML_REGION), such as global or us-east5")
	case cfg.ProjectID == "":
		return nil, errors.New("vertex: no project: set Config.ProjectID (ANTHROPIC_VERTEX_PROJECT_ID)")
	}
	creds := cfg.Credentials
	switch {
	case cfg.SkipAuth:
		creds = &google.Credentials{TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "skip"})}
	case creds == nil:
		var err error
		if creds, err = google.FindDefaultCredentials(ctx, "https://www.googleapis.com/auth/cloud-platform"); err != nil {
			return nil, fmt.Errorf("vertex: no Google credentials (run gcloud auth application-default login): %w", err)
		}
	}
	opts := []option.RequestOption{sdkvertex.WithCredentials(ctx, cfg.Region, cfg.ProjectID, creds)}
	if cfg.SkipAuth {
		// After the SDK's option, which wrapped the client in credentials.
		opts = append(opts, option.WithHTTPClient(cmp.Or(cfg.HTTPClient, http.DefaultClient)))
	}
	return &llm.Platform{Name: "Vertex AI", Options: opts, Model: model}, nil
}

// models maps the model table's names (llm.LookupModel) to Vertex AI's
// model ids (its Model Garden, November 2026): dated up to Claude 4.5,
// the name itself since.
var models = map[string]string{
	"claude-opus-5-5": "claude-opus-5-5", "claude-sonnet-5-5": "claude-sonnet-5-5", "claude-haiku-5-5": "claude-haiku-5-5",
	"claude-fable-5-1": "claude-fable-5-1", "claude-fable-5": "claude-fable-5", "claude-opus-5": "claude-opus-5",
	"claude-sonnet-5": "claude-sonnet-5", "claude-opus-4-8": "claude-opus-4-8", "claude-opus-4-7": "claude-opus-4-7",
	"claude-opus-4-6": "claude-opus-4-6", "claude-sonnet-4-6": "claude-sonnet-4-6",
	"claude-opus-4-5": "claude-opus-4-5@20251101", "claude-sonnet-4-5": "claude-sonnet-4-5@20250929",
	"claude-haiku-4-5": "claude-haiku-4-5@20251001", "claude-opus-4-1": "claude-opus-4-1@20250805",
	"claude-opus-4": "claude-opus-4@20250514", "claude-opus-4-0": "claude-opus-4@20250514",
	"claude-sonnet-4": "claude-sonnet-4@20250514", "claude-sonnet-4-0": "claude-sonnet-4@20250514",
	"claude-3-5-haiku": "claude-3-5-haiku@20241022", "claude-3-haiku": "claude-3-haiku@20240307",
}

// model maps a model of the table to its Vertex AI id, and sends an id
// with "@" as it is.
func model(name string) (string, error) {
	if strings.Contains(name, "@") {
		return name, nil
	}
	if id, ok := models[apirules.Undated(name)]; ok {
		return id, nil
	}
	return "", fmt.Errorf("vertex: model %q is not one agentloop knows on Vertex AI (%s): name one of those, or pass a Vertex AI model id, such as claude-sonnet-4-5@20250929",
		name, strings.Join(slices.Sorted(maps.Keys(models)), ", "))
}
