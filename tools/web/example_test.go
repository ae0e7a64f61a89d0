package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tools/web"
)

func ExampleNew() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<h1>agentloop</h1><p>An agent loop you can <em>read</em>.</p>`)
	}))
	defer srv.Close()
	reg := tool.NewRegistry(tool.Config{})
	if err := reg.Register(web.New(web.Config{HTTPClient: srv.Client()})); err != nil {
		panic(err)
	}
	input, _ := json.Marshal(web.Input{URL: srv.URL})
	res := reg.Run(context.Background(), []llm.ToolUse{{ID: "toolu_1", Name: web.Name, Input: input}})[0]
	fmt.Println(llm.TextOf(res.Content))
	srv.Client().CloseIdleConnections()
	// Output:
	// # agentloop
	//
	// An agent loop you can *read*.
}
