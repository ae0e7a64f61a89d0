// Package subagent offers agents to another agent as a tool, the way
// Claude Code's Task tool does: the model delegates a task to an agent of
// its own instructions, tools, model and limits by calling the tool
// [Tool] returns, named task, with Claude Code's input (description,
// prompt, subagent_type).
//
// Each call is a fresh run of package agent's own loop: a new history
// whose only user message is the call's prompt. Its final text is the
// call's result; a run that fails, is refused or hits a limit gives an
// is_error result that says so. Its events go to the parent's stream as
// [agent.Nested] events marked with the call's tool_use id ([agent.Relay]).
// The run happens under the call's ctx, so that package agent adds its usage
// and cost to the parent's Result, counts them against the parent's
// limits, and ends when the parent is cancelled; its invoke_agent span
// sits under the call's execute_tool span. Several calls in one turn run
// concurrently, within the parent's registry's limit.
//
// [Input.Check] and [Answer] are the tool's checks of a call and its
// results, for a runtime that runs the calls itself, as package durable
// runs each as a child workflow.
//
// A subagent's tool calls pass its own Config.Hooks: give it the parent's,
// so that they pass the same approval. A subagent has no task
// tool: no recursion.
package subagent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/tool"
)

// ToolName is the name of the delegation tool, Claude Code's.
const ToolName = "task"

// An Agent is an agent offered as a subagent.
type Agent struct {
	// Name is the subagent_type the model names it by: lower-case
	// letters, digits, '-' and '_'. Required.
	Name string
	// Description tells the model what the agent does and when to use it.
	// Required.
	Description string
	// Config configures each of its runs. Model is required, as for
	// [agent.New]. Name defaults to the Agent's, for traces. History, if
	// set, is only a template: each run gets a new memory.History of its
	// Config. The tools may not include one named task.
	Config agent.Config
	// Done, if set, is called after each run with the tool_use id of the
	// call, the run's history and its Result, such as to keep its
	// transcript. It may be called from several goroutines at once.
	Done func(callID string, h *memory.History, res agent.Result)
}

// A subagent is an Agent, checked, with its history's Config.
type subagent struct {
	Agent
	memory memory.Config
}

// Input is the task tool's input, in Claude Code's names.
type Input struct {
	Description  string `json:"description" jsonschema:"a short (3 to 5 words) description of the task"`
	Prompt       string `json:"prompt" jsonschema:"the task for the agent to perform, with everything it needs to know: it sees nothing else of this conversation"`
	SubagentType string `json:"subagent_type" jsonschema:"the agent to give the task to"`
}

var validName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// Tool returns the task tool, which gives a task to one of agents. Its
// description lists each agent by name and description. It returns an
// error naming the agent and what is wrong with it, such as a missing
// description or a Config that agent.New refuses.
func Tool(agents ...Agent) (*tool.Tool, error) {
	if len(agents) == 0 {
		return nil, errors.New("subagent: no agents")
	}
	subs := make(map[string]subagent, len(agents))
	var names []string
	var list strings.Builder
	for _, a := range agents {
		s, tools, err := check(a)
		if err != nil {
			return nil, err
		}
		if _, dup := subs[a.Name]; dup {
			return nil, fmt.Errorf("subagent: two agents are named %q", a.Name)
		}
		subs[a.Name], names = s, append(names, a.Name)
		fmt.Fprintf(&list, "\n- %s: %s (tools: %s)", a.Name, strings.Join(strings.Fields(a.Description), " "), cmp.Or(strings.Join(tools, ", "), "none"))
	}
	schema, err := jsonschema.For[Input](nil)
	if err != nil {
		return nil, err
	}
	schema.Properties["subagent_type"].Enum = anys(names)
	desc := "Give a task to an agent, which works on it alone, with its own instructions and tools, and answers with its final report, " +
		"which becomes this tool's result. The agent sees only your prompt, not this conversation: say in it everything it needs, " +
		"and what to report back. Calls in one turn run concurrently.\n\nThe agents (subagent_type):" + list.String()
	return tool.NewWithSchema(ToolName, desc, schema, func(ctx context.Context, in Input) (llm.ToolResult, error) {
		if err := in.Check(names); err != nil {
			return llm.ToolResult{}, err
		}
		return subs[in.SubagentType].run(ctx, in.Prompt)
	})
}

// Check reports what is wrong with in as the input of a task call for one
// of the agents named: an agent not among them (which the tool's schema
// keeps the API from sending), or a blank prompt. Its error is for the
// model, to correct the call by.
func (in Input) Check(agents []string) error {
	switch {
	case !slices.Contains(agents, in.SubagentType):
		return fmt.Errorf("unknown subagent_type %q; the agents are %s", in.SubagentType, strings.Join(agents, ", "))
	case strings.TrimSpace(in.Prompt) == "":
		return errors.New("the prompt is blank: give the agent its task, with everything it needs to know")
	}
	return nil
}

// Answer is the result of a task call whose run of the agent named ended
// as res, or failed with err: the run's final text, or an error saying why
// there is none (its last text included), which a tool registry makes an
// is_error result.
func Answer(name string, res agent.Result, err error) (llm.ToolResult, error) {
	switch {
	case err != nil:
		return llm.ToolResult{}, fmt.Errorf("agent %q failed: %w", name, err)
	case res.State == agent.Finished:
		return llm.ToolResult{Content: []llm.Block{llm.Text{Text: cmp.Or(res.Text, "(the agent finished without an answer)")}}}, nil
	}
	msg := fmt.Sprintf("agent %q stopped without a final answer: %s", name, res.State)
	if strings.TrimSpace(res.Text) != "" {
		msg += "; its last text:\n\n" + res.Text
	}
	return llm.ToolResult{}, errors.New(msg)
}

// ToolNames returns the names of the tools a's Config gives its runs, in
// Tools and in the Registry, sorted, each once.
func (a Agent) ToolNames() []string {
	var names []string
	for _, t := range a.Config.Tools {
		if t != nil {
			names = append(names, t.Spec().Name)
		}
	}
	if a.Config.Registry != nil {
		for _, s := range a.Config.Registry.Specs() {
			names = append(names, s.Name)
		}
	}
	return slices.Compact(slices.Sorted(slices.Values(names)))
}

// check checks a, and returns it ready to run, with its tools' names.
func check(a Agent) (subagent, []string, error) {
	switch {
	case !validName.MatchString(a.Name):
		return subagent{}, nil, fmt.Errorf("subagent: agent name %q: want 1 to 64 lower-case letters, digits, '-' or '_'", a.Name)
	case strings.TrimSpace(a.Description) == "":
		return subagent{}, nil, fmt.Errorf("subagent: agent %q has no description", a.Name)
	}
	tools := a.ToolNames()
	if slices.Contains(tools, ToolName) {
		return subagent{}, nil, fmt.Errorf("subagent: agent %q has a %s tool: a subagent may not delegate", a.Name, ToolName)
	}
	s := subagent{Agent: a}
	if a.Config.History != nil {
		s.memory = a.Config.History.Config()
	}
	s.Config.Name = cmp.Or(a.Config.Name, a.Name)
	if _, err := agent.New(s.config()); err != nil {
		return subagent{}, nil, fmt.Errorf("subagent: agent %q: %w", a.Name, err)
	}
	return s, tools, nil
}

// config is s's Config with a new history.
func (s subagent) config() agent.Config {
	cfg := s.Config
	cfg.History = memory.New(s.memory)
	return cfg
}

// run runs s on prompt: its final text, or an error saying why there is
// none, which the registry makes an is_error result.
func (s subagent) run(ctx context.Context, prompt string) (llm.ToolResult, error) {
	cfg := s.config()
	a, err := agent.New(cfg)
	if err != nil {
		return llm.ToolResult{}, fmt.Errorf("agent %q: %w", s.Name, err)
	}
	var res agent.Result
	for ev, e := range a.Stream(ctx, prompt) {
		agent.Relay(ctx, cfg.Name, ev)
		if r, ok := ev.(agent.Result); ok {
			res, err = r, e
		}
	}
	if s.Done != nil {
		s.Done(agent.CallID(ctx), cfg.History, res)
	}
	return Answer(s.Name, res, err)
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
