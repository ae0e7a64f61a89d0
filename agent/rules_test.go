package agent

import (
	"testing"

	"github.com/agentloop/agentloop/llm"
)

func TestShown(t *testing.T) {
	img := llm.Image{MediaType: "image/png", Data: "AA=="}
	for _, tt := range []struct {
		content []llm.Block
		want    string
	}{
		{nil, ""},
		{[]llm.Block{llm.Text{Text: " indented"}}, " indented"}, // the text as the tool wrote it
		{[]llm.Block{img}, "[image]"},
		{[]llm.Block{llm.Text{Text: "a plot:"}, img, img}, "a plot: [image] [image]"},
		{[]llm.Block{llm.Text{}, img}, "[image]"},                                                         // no blank text before it
		{[]llm.Block{llm.Text{Text: "The answer is 42."}, llm.Text{Text: "{}"}}, "The answer is 42.\n{}"}, // not "42.{}"
	} {
		if got := shown(tt.content); got != tt.want {
			t.Errorf("shown(%v) = %q, want %q", tt.content, got, tt.want)
		}
	}
}
