package permission_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tools/permission"
)

func ExamplePolicy() {
	allow, _ := permission.ParseRule("bash(go test:*)")
	deny, _ := permission.ParseRule("bash(rm:*)")
	p := &permission.Policy{Allow: []permission.Rule{allow}, Deny: []permission.Rule{deny}}
	for _, cmd := range []string{"go test ./...", "go test ./... && rm -rf ~", "rm -rf ~", `sh -c "command rm -rf ~"`, "go test -exec sh ./..."} {
		input, _ := json.Marshal(map[string]string{"command": cmd})
		err := p.Approve(context.Background(), llm.ToolUse{Name: "bash", Input: input})
		fmt.Printf("%-26s allowed=%v\n", cmd, err == nil)
	}
	// Output:
	// go test ./...              allowed=true
	// go test ./... && rm -rf ~  allowed=false
	// rm -rf ~                   allowed=false
	// sh -c "command rm -rf ~"   allowed=false
	// go test -exec sh ./...     allowed=false
}
