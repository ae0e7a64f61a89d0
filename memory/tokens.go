package memory

import (
	"context"
	"encoding/base64"
	"image"
	_ "image/gif" // image.DecodeConfig reads their sizes for the estimate
	_ "image/jpeg"
	_ "image/png"
	"math"
	"strings"

	"github.com/agentloop/agentloop/llm"
)

// blockOverhead is the characters we charge each block and message for its
// framing (type, ids, role markers). The learned ratio absorbs the error.
const blockOverhead = 12

// Token counts from images follow the API's documented rule: an image is
// scaled to fit 1568 pixels on its long edge and about 1.15 megapixels, and
// then costs width×height/750 tokens.
const (
	imageMaxEdge   = 1568
	imageMaxPixels = 1_150_000
	// imageFallback is charged for an image whose size we cannot read
	// (WebP, corrupt data): the most any image costs.
	imageFallback = imageMaxPixels / 750
)

// Tokens returns the token count of what the next request would send:
// system prompt, tools and messages.
//
// The part the API has already measured is exact: the last assistant turn's
// usage (input + cache writes + cache reads + output) counts everything
// through that turn. Only messages added since are estimated, at a
// characters-per-token ratio learned from the API's own counts (3.5 until
// the first count), plus the documented cost of each image. After a
// compaction or when no turn has reported usage, everything is estimated,
// system prompt and tool schemas included.
//
// Thinking blocks count nothing in estimates: the API strips them from
// earlier turns, and the latest turn's thinking is in its exact output
// count.
func (h *History) Tokens() int {
	last := h.lastExact()
	if last >= 0 {
		return h.entries[last].exact + h.estimate(h.entries[last+1:], false)
	}
	return h.estimate(h.entries, true)
}

// NeedsCompaction reports whether [History.Tokens] exceeds
// Config.ContextLimit.
func (h *History) NeedsCompaction() bool { return h.Tokens() > h.cfg.ContextLimit }

// recount returns [History.Tokens], first replacing the estimate with an
// exact count from Config.Counter when one is configured, part of the count
// is estimated and the estimate has reached 90% of the limit. The count
// also refines the learned ratio. A failed count leaves the estimate, which
// is good enough to decide the next compaction step.
func (h *History) recount(ctx context.Context) int {
	n := h.Tokens()
	c := h.cfg.Counter
	if c == nil || len(h.entries) == 0 || n < h.cfg.ContextLimit*9/10 || h.lastExact() == len(h.entries)-1 {
		return n
	}
	exact, err := c.CountTokens(ctx, llm.Request{
		Model:     h.cfg.Model,
		MaxTokens: h.cfg.MaxTokens,
		System:    h.system,
		Tools:     h.tools,
		Messages:  h.Messages(),
	})
	if err != nil {
		h.cfg.Logger.Warn("memory: count_tokens failed; using the estimate", "err", err)
		return n
	}
	if exact <= 0 {
		return n
	}
	h.learn(exact)
	h.entries[len(h.entries)-1].exact = exact
	return exact
}

func (h *History) lastExact() int {
	for i := len(h.entries) - 1; i >= 0; i-- {
		if h.entries[i].exact > 0 {
			return i
		}
	}
	return -1
}

// estimate returns the estimated tokens of es, and of the system prompt and
// tools when withPrefix is set.
func (h *History) estimate(es []entry, withPrefix bool) int {
	chars, img := 0, 0
	if withPrefix {
		chars = h.prefixChars
	}
	for _, e := range es {
		chars += e.chars
		img += e.imageTokens
	}
	return int(math.Ceil(float64(chars)/h.ratio)) + img
}

// learn sets the ratio from an exact input count of the whole history as it
// is now (system and tools included). Tiny samples are too noisy to learn
// from, and the clamp guards against a count that measured something else.
func (h *History) learn(inputTokens int) {
	chars, img := h.prefixChars, 0
	for _, e := range h.entries {
		chars += e.chars
		img += e.imageTokens
	}
	text := inputTokens - img
	if text < 50 || chars < 200 {
		return
	}
	h.ratio = min(max(float64(chars)/float64(text), 0.5), 12)
}

// measure returns the characters an estimate charges for m, and the tokens
// of its images.
func measure(m llm.Message) (chars, imageTokens int) {
	chars = blockOverhead
	for _, b := range m.Content {
		c, t := measureBlock(b)
		chars += c
		imageTokens += t
	}
	return chars, imageTokens
}

func measureBlock(b llm.Block) (chars, imageTokens int) {
	switch b := b.(type) {
	case llm.Text:
		chars = len(b.Text)
		for _, c := range b.Citations {
			chars += len(c)
		}
	case llm.Thinking, llm.RedactedThinking:
		return 0, 0
	case llm.ToolUse:
		chars = len(b.ID) + len(b.Name) + len(b.Input)
	case llm.ToolResult:
		chars = len(b.ToolUseID)
		for _, c := range b.Content {
			cc, ct := measureBlock(c)
			chars += cc
			imageTokens += ct
		}
	case llm.Image:
		return blockOverhead, imageCost(b)
	case llm.RawBlock:
		chars = len(b.JSON)
	}
	return chars + blockOverhead, imageTokens
}

// imageCost estimates what an image costs, by the API's documented rule,
// from the dimensions in its header. An image whose header it cannot read
// counts as the largest image would.
func imageCost(img llm.Image) int {
	cfg, _, err := image.DecodeConfig(base64.NewDecoder(base64.StdEncoding, strings.NewReader(img.Data)))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return imageFallback
	}
	w, hgt := float64(cfg.Width), float64(cfg.Height)
	if long := max(w, hgt); long > imageMaxEdge {
		w, hgt = w*imageMaxEdge/long, hgt*imageMaxEdge/long
	}
	if px := w * hgt; px > imageMaxPixels {
		s := math.Sqrt(imageMaxPixels / px)
		w, hgt = w*s, hgt*s
	}
	return max(1, int(math.Ceil(w*hgt/750)))
}
