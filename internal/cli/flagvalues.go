package cli

import (
	"flag"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
)

// This file reads the values of flags as a demanding user expects: errors
// name a flag as --help does, a blank value is an error, not a silent
// default, and a model is named as in Claude Code.

// blankAllowed are the flags whose empty value means something: no
// system prompt, nothing appended.
var blankAllowed = []string{"system", "append-system"}

// parseArgs parses args with fs. Its errors name a flag as --help does,
// with two dashes (the flag package writes -bogus), and a flag given a
// blank value is an error rather than its default.
func parseArgs(fs *flag.FlagSet, args []string) error {
	var bad error
	fs.VisitAll(func(f *flag.Flag) { f.Value = checkedValue{f.Value, f.Name, &bad} })
	// The flags before the first word that is not one, found as the
	// flag package finds them, so that an unknown or incomplete one is
	// named here.
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		f := fs.Lookup(name)
		switch {
		case f == nil:
			return usageError("unknown flag %s (see agentloop --help)", flagName(name))
		case f.Value.(checkedValue).IsBoolFlag() || hasValue:
		case i+1 == len(args):
			return usageError("%s needs a value (see agentloop --help)", flagName(name))
		case isFlag(fs, args[i+1]):
			// --model --json would take "--json" for a model's name.
			return usageError("%s needs a value, but %s follows it (see agentloop --help)", flagName(name), args[i+1])
		default:
			i++
		}
	}
	if err := fs.Parse(args); err != nil {
		return usageError("%v (see agentloop --help)", err) // the scan above found none
	}
	return bad
}

// isFlag reports whether arg names a flag of fs, as -v, --json or
// --model=x. A negative number names none.
func isFlag(fs *flag.FlagSet, arg string) bool {
	name, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(arg, "-"), "-"), "=")
	return strings.HasPrefix(arg, "-") && name != "" && fs.Lookup(name) != nil
}

// flagName is how --help writes the flag name: -v, --model.
func flagName(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// checkedValue is a flag's value that keeps the first error of any flag in
// *bad, worded with the flag's name, instead of returning it for the flag
// package to word.
type checkedValue struct {
	flag.Value
	name string
	bad  *error
}

func (v checkedValue) Set(s string) error {
	var err error
	switch {
	case strings.TrimSpace(s) == "" && !slices.Contains(blankAllowed, v.name):
		err = usageError("%s needs a value, not a blank one (see agentloop --help)", flagName(v.name))
	default:
		if e := v.Value.Set(s); e != nil {
			err = usageError("invalid value %q for %s: %v (see agentloop --help)", s, flagName(v.name), e)
		}
	}
	if *v.bad == nil {
		*v.bad = err
	}
	return nil
}

// IsBoolFlag tells the flag package, as the wrapped value would, that the
// flag takes no value.
func (v checkedValue) IsBoolFlag() bool {
	b, ok := v.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// modelAliases are Claude Code's model aliases, each the current model of
// its family in the model table (llm.LookupModel).
var modelAliases = map[string]string{
	"opus":   "claude-opus-5-5",
	"sonnet": "claude-sonnet-5-5",
	"haiku":  "claude-haiku-5-5",
}

// resolveModel returns the model that name (from --model or
// ANTHROPIC_MODEL) stands for, and a warning when the model table (llm.LookupModel) does not know
// it: the name is sent as it is, as a model newer than this build would be
// named, but a typo would cost a request and a 404.
func resolveModel(name string) (model, warning string) {
	if m, ok := modelAliases[name]; ok {
		return m, ""
	}
	if _, known := llm.LookupModel(name); known {
		return name, ""
	}
	return name, fmt.Sprintf("warning: model %q is not one agentloop knows (such as opus, sonnet, haiku or %s): "+
		"it is sent as it is, with no price or limits, under the current models' rules", name, defaultModel)
}

// checkSecretEnv checks the --secret-env names and patterns: each a name,
// or a pattern such as AWS_*, never NAME=VALUE, which would match no
// variable and leave the secret in bash's environment.
func checkSecretEnv(names []string) error {
	for _, n := range names {
		if _, err := path.Match(n, ""); err != nil || strings.Contains(n, "=") {
			return usageError("--secret-env %q is not a variable name or a pattern such as 'AWS_*'", n)
		}
	}
	return nil
}

// checkContextLimit checks --context-limit (cfg.ContextLimit, 0 for the
// default) against what every request sends: at or below the system prompt
// and the tool definitions, nothing would be left for the conversation, and
// every turn would compact in vain.
func checkContextLimit(cfg memory.Config, system string, tools []llm.ToolSpec) error {
	if cfg.ContextLimit == 0 {
		return nil
	}
	h := memory.New(cfg)
	tools = slices.Clone(tools)
	for i := range tools {
		tools[i].DeferLoading = false // counted whole, whether or not tool search defers it
	}
	h.SetPrefix(system, tools)
	if n := h.Tokens(); cfg.ContextLimit <= n {
		return usageError("--context-limit %d leaves no room for the conversation: the system prompt and the tool definitions take about %d tokens in every request",
			cfg.ContextLimit, n)
	}
	return nil
}
