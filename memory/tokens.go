package memory

import (
	"context"
	"encoding/base64"
	"errors"
	"image"
	_ "image/gif" // image.DecodeConfig reads their sizes for the estimate
	_ "image/jpeg"
	_ "image/png"
	"math"
	"strings"

	"github.com/agentloop/agentloop/llm"
)

const (
	// blockOverhead is the characters charged each block and message for
	// its framing; the learned ratio absorbs the error.
	blockOverhead = 12

	// The API's rule for images: scaled to fit 1568 pixels on the long edge
	// and 1.15 megapixels, an image costs width×height/750 tokens. One of
	// unknown size (WebP, corrupt) costs the most any image does.
	imageMaxEdge   = 1568
	imageMaxPixels = 1_150_000
	imageFallback  = imageMaxPixels / 750
)

// Tokens returns the token count of what the next request would send:
// system prompt, tools and messages. It is exact through the last turn
// whose usage the API reported, and estimated after, at a ratio learned
// from the API's counts, plus each image's documented cost. Thinking,
// which the API strips from earlier turns, counts nothing.
func (h *History) Tokens() int {
	for i := len(h.entries) - 1; i >= 0; i-- {
		if n := h.entries[i].Tokens; n > 0 {
			return n + h.estimate(0, h.entries[i+1:])
		}
	}
	return h.estimate(h.prefixChars, h.entries)
}

// ToolTokens estimates the tokens specs take in a request, as if none were
// deferred, at the ratio the history learned: what tool search would save.
func (h *History) ToolTokens(specs []llm.ToolSpec) int {
	chars := 0
	for _, t := range specs {
		chars += specChars(t)
	}
	return h.estimate(chars, nil)
}

// specChars is the characters an estimate charges for a tool's spec.
func specChars(t llm.ToolSpec) int {
	return len(t.Name) + len(t.Description) + len(t.InputSchema) + blockOverhead
}

// NeedsCompaction reports whether [History.Tokens] exceeds
// Config.ContextLimit, unless Config.Compaction is "off".
func (h *History) NeedsCompaction() bool {
	return h.cfg.Compaction != "off" && h.Tokens() > h.cfg.ContextLimit
}

// recount returns [History.Tokens], made exact by Config.Counter once an
// estimate reaches 90% of the limit; a failed count leaves the estimate.
func (h *History) recount(ctx context.Context) int {
	n, c := h.Tokens(), h.cfg.Counter
	if c == nil || len(h.entries) == 0 || n < h.cfg.ContextLimit*9/10 || h.entries[len(h.entries)-1].Tokens > 0 {
		return n
	}
	exact, err := c(ctx, h.request())
	if err != nil || exact <= 0 {
		h.cfg.Logger.Warn("memory: count_tokens failed; using the estimate", "err", err, "count", exact)
		return n
	}
	h.learn(exact)
	h.entries[len(h.entries)-1].Tokens = exact
	return exact
}

// request returns a request of the whole history and its prefix, without
// the settings (thinking, cache, context edits) an agent adds to a turn.
func (h *History) request() llm.Request {
	return llm.Request{Model: h.cfg.Model, MaxTokens: h.cfg.MaxTokens, System: h.system, Tools: h.tools, Messages: h.Messages()}
}

// estimate returns the estimated tokens of es after chars of prefix.
func (h *History) estimate(chars int, es []entry) int {
	chars, img := measures(chars, es)
	return int(math.Ceil(float64(chars)/h.ratio)) + img
}

// measures adds the characters of es to chars, and sums their image tokens.
func measures(chars int, es []entry) (int, int) {
	img := 0
	for _, e := range es {
		chars, img = chars+e.chars, img+e.imageTokens
	}
	return chars, img
}

// learn sets the ratio from an exact input count of the whole history as
// it is. Tiny samples are too noisy; the clamp guards against a count of
// something else.
func (h *History) learn(inputTokens int) {
	chars, img := measures(h.prefixChars, h.entries)
	if text := inputTokens - img; text >= 50 && chars >= 200 {
		h.ratio = min(max(float64(chars)/float64(text), 0.5), 12)
	}
}

// measureBlocks returns the characters an estimate charges for bs and what
// holds them (blockOverhead each), and the tokens of their images.
func measureBlocks(bs []llm.Block) (chars, imageTokens int) {
	chars = blockOverhead
	for _, b := range bs {
		chars += blockOverhead
		switch b := b.(type) {
		case llm.Text:
			chars += len(b.Text)
			for _, c := range b.Citations {
				chars += len(c)
			}
		case llm.Thinking, llm.RedactedThinking:
			chars -= blockOverhead
		case llm.ToolUse:
			chars += len(b.ID) + len(b.Name) + len(b.Input)
		case llm.ToolResult: // its content's overhead stands for its own
			c, t := measureBlocks(b.Content)
			chars, imageTokens = chars+c+len(b.ToolUseID)-blockOverhead, imageTokens+t
		case llm.Image:
			imageTokens += imageCost(b)
		case llm.RawBlock:
			chars += len(b.JSON)
		}
	}
	return chars, imageTokens
}

// imageCost estimates what an image costs from the size in its header.
func imageCost(img llm.Image) int {
	cfg, _, err := image.DecodeConfig(base64.NewDecoder(base64.StdEncoding, strings.NewReader(img.Data)))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return imageFallback
	}
	w, hgt := float64(cfg.Width), float64(cfg.Height)
	s := min(1, imageMaxEdge/max(w, hgt), math.Sqrt(imageMaxPixels/(w*hgt))) // the scale that meets both limits
	return max(1, int(math.Ceil(w*s*hgt*s/750)))
}

// MarkOverflow records that the API found the history too long for the
// context window, as err said (one matching [llm.ErrPromptTooLong], or the
// stop reason model_context_window_exceeded). The count it reports, else
// the window, becomes the exact count, so that the next [History.Compact]
// does real work even when the estimate was low.
func (h *History) MarkOverflow(err error) {
	if len(h.entries) == 0 {
		return
	}
	n := max(h.Tokens(), h.cfg.ContextWindow) // unless err states the count
	if ae, ok := errors.AsType[*llm.APIError](err); ok && ae.PromptTokens() > 0 {
		n = ae.PromptTokens()
		h.learn(n)
	}
	h.entries[len(h.entries)-1].Tokens = max(n, h.cfg.ContextLimit+1)
}
