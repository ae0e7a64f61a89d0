package vertex_test

import (
	"context"
	"fmt"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/vertex"
)

// A turn on Vertex AI, against the fake's Vertex route: the model goes in
// the URL, the credentials' token in the Authorization header.
func Example() {
	srv := anthropictest.NewServer(anthropictest.NewStream().Text("Hello from Vertex AI."))
	defer srv.Close()

	creds := &google.Credentials{TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "ya29.example"})} // in real use, nil: ADC
	p, err := vertex.New(context.Background(), vertex.Config{Region: "global", ProjectID: "my-project", Credentials: creds})
	if err != nil {
		fmt.Println(err)
		return
	}
	client := llm.New(llm.Config{Platform: p, BaseURL: srv.URL}) // no BaseURL: aiplatform.googleapis.com
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
	fmt.Println(srv.Requests()[0].Path)
	// Output:
	// Hello from Vertex AI.
	// /v1/projects/my-project/locations/global/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict
}
