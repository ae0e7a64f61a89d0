package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tools/calculator"
)

// demoPrompt is the question of the demo's scripted session.
const demoPrompt = "What is 12 × 7 plus 144 ÷ 12? Then square the result."

// Paces of the demo's stream on a terminal: slow enough to watch, and the
// tool-input fragments slower still, since their assembly is the lesson.
const (
	demoTextPace     = 25 * time.Millisecond
	demoFragmentPace = 90 * time.Millisecond
)

// demo runs a scripted calculator session with no key and no network: a
// fake Anthropic API (package anthropictest) on loopback plays the model,
// and everything else is real: the llm client parsing the stream, the agent
// loop assembling tool calls and running them, the calculator tool.
//
// The script answers from the tool results it receives, so a loop that sent
// back wrong results would get a wrong answer, or a 400 error.
func (c *cli) demo(ctx context.Context, o *options, stdout, stderr io.Writer) error {
	pace := !o.fast && c.isTerminal(stdout)
	srv := anthropictest.NewServer(anthropictest.Repeat(anthropictest.ReplyFunc(func(r *anthropictest.Request) anthropictest.Reply {
		return demoReply(r, pace)
	})))
	defer srv.Close()

	// The demo plays a model; its name keeps the output honest about it.
	o.model = "scripted-demo-model"
	o.tools = []string{calculator.Name}
	logger := newLogger(stderr, o.verbose)
	client := llm.New(llm.Config{APIKey: "demo-needs-no-key", BaseURL: srv.URL, Logger: logger})
	s, err := c.newSession(ctx, o, client, logger, stdout, stderr, true)
	if err != nil {
		return err
	}
	defer s.close()

	if !o.json {
		st := c.newStyle(stderr)
		fmt.Fprintf(stderr, "%s a fake Anthropic API on %s plays the model from a script; the llm client,\n"+
			"the agent loop and the calculator tool are the real ones. No key, no network.\n\n", st.phase("demo"), srv.URL)
		fmt.Fprintf(stderr, "%s %s\n", st.phase("user"), demoPrompt)
	}
	err = s.turn(ctx, demoPrompt, c.interrupts)
	if err == nil && !o.json {
		fmt.Fprintf(stderr, "\nThat was think → act → observe, %s over. For real: export ANTHROPIC_API_KEY=sk-ant-...\n"+
			"then agentloop --tools calculator %q\n", plural(len(srv.Requests()), "time", "times"), demoPrompt)
	}
	return err
}

// demoReply is the scripted model. It picks its turn from the number of
// tool results the conversation holds, and computes each step from the
// results the agent sent back.
func demoReply(r *anthropictest.Request, pace bool) anthropictest.Reply {
	msgs := r.Messages()
	results := map[string]string{}
	for _, m := range msgs {
		for _, b := range m.Content {
			if b.Type != "tool_result" {
				continue
			}
			var text strings.Builder
			for _, c := range b.Content {
				text.WriteString(c.Text)
			}
			if b.IsError {
				return anthropictest.HTTPError{Status: 400, Type: "invalid_request_error", Message: fmt.Sprintf("demo script: tool call %s failed: %s", b.ToolUseID, text.String())}
			}
			results[b.ToolUseID] = text.String()
		}
	}
	num := func(id string) (float64, error) {
		v, ok := results[id]
		if !ok {
			return 0, fmt.Errorf("demo script: no tool_result for %s in request %d", id, r.N)
		}
		return strconv.ParseFloat(v, 64)
	}
	s := anthropictest.NewStream().Usage(420+180*len(results), 0, 0, 0)
	textPace, fragPace := time.Duration(0), time.Duration(0)
	if pace {
		textPace, fragPace = demoTextPace, demoFragmentPace
	}
	text := func(t string) { s.Pace(textPace).Text(words(t)...) }
	call := func(id string, a, b float64, op string) {
		in, _ := json.Marshal(calculator.Input{A: a, B: b, Operation: op})
		// Split every 7 bytes: the cuts land inside keys, numbers and
		// strings, as the API's own fragments do.
		s.Pace(fragPace).ToolUse(id, calculator.Name, anthropictest.Split(string(in), 7)...)
	}
	fail := func(err error) anthropictest.Reply {
		return anthropictest.HTTPError{Status: 400, Type: "invalid_request_error", Message: err.Error()}
	}

	switch len(results) {
	case 0:
		// Two independent products: the model asks for both at once,
		// and the loop runs them concurrently.
		text("I'll work out both parts at once.")
		s.Pace(fragPace).ToolUse("toolu_demo_1", calculator.Name,
			`{"a": 1`, `2, "b"`, `: 7, "op`, `eration": "mul`, `tiply"}`)
		s.Pace(fragPace).ToolUse("toolu_demo_2", calculator.Name,
			`{"a": 14`, `4, "b": 1`, `2, "opera`, `tion": "di`, `vide"}`)
		return s.Pace(textPace).Stop("tool_use", 96)
	case 2:
		x, err1 := num("toolu_demo_1")
		y, err2 := num("toolu_demo_2")
		if err1 != nil || err2 != nil {
			return fail(fmt.Errorf("%v %v", err1, err2))
		}
		text(fmt.Sprintf("%s and %s. Now the sum.", fmtNum(x), fmtNum(y)))
		call("toolu_demo_3", x, y, "add")
		return s.Pace(textPace).Stop("tool_use", 58)
	case 3:
		sum, err := num("toolu_demo_3")
		if err != nil {
			return fail(err)
		}
		text(fmt.Sprintf("The sum is %s. Squaring it:", fmtNum(sum)))
		call("toolu_demo_4", sum, sum, "multiply")
		return s.Pace(textPace).Stop("tool_use", 52)
	case 4:
		x, _ := num("toolu_demo_1")
		y, _ := num("toolu_demo_2")
		sum, _ := num("toolu_demo_3")
		sq, err := num("toolu_demo_4")
		if err != nil {
			return fail(err)
		}
		text(fmt.Sprintf("12 × 7 = %s and 144 ÷ 12 = %s, which add up to %s. Squared, that is %s.\n",
			fmtNum(x), fmtNum(y), fmtNum(sum), fmtNum(sq)))
		return s.Pace(textPace).Stop("end_turn", 40)
	default:
		return fail(fmt.Errorf("demo script: unexpected conversation with %d tool results", len(results)))
	}
}

// words splits t into word-sized deltas, as a model streams text.
func words(t string) []string {
	var out []string
	for len(t) > 0 {
		i := strings.IndexByte(t[1:], ' ')
		if i < 0 {
			out = append(out, t)
			break
		}
		out = append(out, t[:i+1])
		t = t[i+1:]
	}
	return out
}

func fmtNum(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
