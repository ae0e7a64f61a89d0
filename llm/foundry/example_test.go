package foundry_test

import (
	"context"
	"fmt"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/foundry"
)

// A turn on Foundry, against the fake: Foundry's key goes, as x-api-key.
func Example() {
	srv := anthropictest.NewServer(anthropictest.NewStream().Text("Hello from Foundry."))
	defer srv.Close()

	p, err := foundry.New(foundry.Config{BaseURL: srv.URL, APIKey: "foundry-key"}) // or Resource: "my-resource"
	if err != nil {
		fmt.Println(err)
		return
	}
	client := llm.New(llm.Config{Platform: p})
	req := llm.Request{Model: "claude-sonnet-4-5", Messages: []llm.Message{{Role: llm.User, Content: []llm.Block{llm.Text{Text: "Hi"}}}}}
	for ev, err := range client.Stream(context.Background(), req) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if d, ok := ev.(llm.TextDelta); ok {
			fmt.Println(d.Text)
		}
	}
	fmt.Println(srv.Requests()[0].Header.Get("X-Api-Key"))
	// Output:
	// Hello from Foundry.
	// foundry-key
}
