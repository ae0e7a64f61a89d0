package llm

import (
	"errors"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// A Platform serves Claude's Messages API somewhere other than the
// Anthropic API: Amazon Bedrock, Google Vertex AI or Microsoft Foundry.
// Packages llm/bedrock, llm/vertex and llm/foundry make one from the SDK's
// own packages, which route, sign and authenticate each request, so that a
// program that uses none of them compiles none of their cloud libraries.
// With [Config].Platform set, everything else works as on the Anthropic
// API: streaming, retries, errors, telemetry.
type Platform struct {
	Name string // the platform's name in errors, such as "Amazon Bedrock"
	// Options are the SDK's request options that adapt a request to the
	// platform (its URL, body, signature or credentials), applied to each
	// request after the body is in place, as the SDK's platform middleware
	// needs. They are the one place SDK types reach llm's API.
	Options []option.RequestOption
	// Model returns the platform's id for the model a Request names, an
	// error if the platform is not known to serve it. Nil sends the name
	// as it is.
	Model func(model string) (string, error)
	// NoCountTokens is set for a platform without a count_tokens route:
	// [Client.CountTokens] then fails at once with [errors.ErrUnsupported],
	// and memory keeps its estimate.
	NoCountTokens bool
	// NoSummarize is set for a platform without compaction on demand
	// (beta compact-2026-09-04): a [Request].Summarize then fails with
	// [errors.ErrUnsupported] before it is sent, and the client's own
	// compaction stays the fallback.
	NoSummarize bool
}

// adapt returns req as the platform takes it (its model id) and its body,
// for count_tokens if count: the one preparation of every request.
func (p *Platform) adapt(req Request, count bool) (Request, body, error) {
	var err error
	switch {
	case p == nil:
	case count && p.NoCountTokens:
		err = fmt.Errorf("llm: %s has no count_tokens route: %w", p.Name, errors.ErrUnsupported)
	case req.Summarize && p.NoSummarize:
		err = fmt.Errorf("llm: %s does not take compaction on demand (beta %s): %w", p.Name, summarizeBeta, errors.ErrUnsupported)
	case p.Model != nil:
		req.Model, err = p.Model(req.Model)
	}
	if err != nil {
		return req, nil, err
	}
	b, err := encodeRequest(req, count)
	return req, b, err
}
