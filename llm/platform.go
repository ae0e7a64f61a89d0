package llm

import (
	"errors"
	"fmt"
	"slices"

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
	// NoBetas lists the betas the platform does not take. A context edit
	// that needs one is left out of a request (the client's own compaction
	// stays the fallback); a Summarize request that needs one fails with
	// [errors.ErrUnsupported] before it is sent.
	NoBetas []string
}

// adapt returns req as the platform takes it: its model id, and none of
// the context edits it does not take.
func (p *Platform) adapt(req Request) (Request, error) {
	if p == nil {
		return req, nil
	}
	if req.Summarize != nil && slices.Contains(p.NoBetas, summarizeBeta) {
		return req, fmt.Errorf("llm: %s does not take compaction on demand (beta %s): %w", p.Name, summarizeBeta, errors.ErrUnsupported)
	}
	if slices.ContainsFunc(req.ContextEdits, p.refuses) {
		req.ContextEdits = slices.DeleteFunc(slices.Clone(req.ContextEdits), p.refuses)
	}
	if p.Model != nil {
		var err error
		if req.Model, err = p.Model(req.Model); err != nil {
			return req, err
		}
	}
	return req, nil
}

// summarizeBeta is the beta of a [Request].Summarize.
const summarizeBeta = "compact-2026-09-04"

// refuses reports whether the platform does not take e's beta.
func (p *Platform) refuses(e ContextEdit) bool {
	return slices.Contains(p.NoBetas, Request{ContextEdits: []ContextEdit{e}}.beta())
}
