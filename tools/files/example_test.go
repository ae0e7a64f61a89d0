package files_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tools/files"
)

func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	os.WriteFile(dir+"/hello.go", []byte("package hello\n\nconst Greeting = \"hello\"\n"), 0o644)

	ws, err := files.Open(files.Config{Dir: dir})
	if err != nil {
		panic(err)
	}
	defer ws.Close()
	reg := tool.NewRegistry(tool.Config{})
	if err := reg.Register(ws.Tools()...); err != nil {
		panic(err)
	}
	for _, c := range []struct{ name, input string }{
		{"edit_file", `{"path": "hello.go", "old_string": "\"hello\"", "new_string": "\"hello, world\""}`},
		{"grep", `{"pattern": "Greeting"}`},
		{"read_file", `{"path": "../../etc/passwd"}`},
	} {
		res := reg.Run(context.Background(), []llm.ToolUse{{ID: "toolu_1", Name: c.name, Input: json.RawMessage(c.input)}})[0]
		fmt.Printf("%s: is_error=%v %.60s\n", c.name, res.IsError, llm.TextOf(res.Content))
	}
	// Output:
	// edit_file: is_error=false edited hello.go: replaced 1 occurrence
	// grep: is_error=false hello.go:3:const Greeting = "hello, world"
	//
	// read_file: is_error=true refused: ../../etc/passwd is outside the working directory /
}
