// Command sdk is the SDK-only agent of internal/cli's big-payload
// benchmarks: the agent loop written with the official SDK alone, as its
// README suggests. It streams a turn, accumulates it, runs each tool call
// (decoding its input, as a typed tool does) and sends the results, until
// the model stops asking for tools.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

func main() {
	url := flag.String("url", "", "the fake API's base URL")
	flag.Parse()
	if err := run(*url); err != nil {
		fmt.Fprintln(os.Stderr, "sdk:", err)
		os.Exit(1)
	}
}

func run(url string) error {
	c := anthropic.NewClient(option.WithBaseURL(url), option.WithAPIKey("sk-ant-bench"), option.WithMaxRetries(0))
	params := anthropic.MessageNewParams{
		Model: "claude-sonnet-4-5", MaxTokens: 8192,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Write the file."))},
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "calculator",
			InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"a": map[string]any{"type": "number"}}}}}},
	}
	for {
		st := c.Messages.NewStreaming(context.Background(), params)
		var m anthropic.Message
		for st.Next() {
			if err := m.Accumulate(st.Current()); err != nil {
				return err
			}
		}
		if err := st.Err(); err != nil {
			return err
		}
		params.Messages = append(params.Messages, m.ToParam())
		if m.StopReason != anthropic.StopReasonToolUse {
			return nil
		}
		var results []anthropic.ContentBlockParamUnion
		for _, b := range m.Content {
			if b.Type != "tool_use" {
				continue
			}
			var in struct {
				A, B      float64
				Operation string
			}
			if err := json.Unmarshal(b.Input, &in); err != nil {
				return err
			}
			results = append(results, anthropic.NewToolResultBlock(b.ID, strconv.FormatFloat(in.A+in.B, 'g', -1, 64), false))
		}
		params.Messages = append(params.Messages, anthropic.NewUserMessage(results...))
	}
}
