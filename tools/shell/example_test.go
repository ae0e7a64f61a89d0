package shell_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tools/shell"
)

func ExampleNew() {
	reg := tool.NewRegistry(tool.Config{})
	env := []string{"PATH=/usr/bin:/bin", "ANTHROPIC_API_KEY=sk-ant-secret", "GREETING=hello"}
	if err := reg.Register(shell.New(shell.Config{Env: env})); err != nil {
		panic(err)
	}
	input, _ := json.Marshal(shell.Input{Command: `echo "$GREETING, key: [$ANTHROPIC_API_KEY]"; exit 2`})
	res := reg.Run(context.Background(), []llm.ToolUse{{ID: "toolu_1", Name: shell.Name, Input: input}})[0]
	fmt.Printf("is_error=%v\n%s\n", res.IsError, llm.TextOf(res.Content))
	// Output:
	// is_error=true
	// hello, key: []
	// [exit status 2]
}
