package bedrock_test

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/bedrock"
)

// A turn on Bedrock, against the fake's Bedrock route: the SDK signs the
// request and reads the AWS event stream back as the API's events.
func Example() {
	srv := anthropictest.NewServer(anthropictest.NewStream().Text("Hello from Bedrock."))
	defer srv.Close()

	creds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "example"}, nil // in real use, the AWS chain's
	})
	p, err := bedrock.New(context.Background(), bedrock.Config{AWS: &aws.Config{Region: "us-east-1", Credentials: creds}})
	if err != nil {
		fmt.Println(err)
		return
	}
	client := llm.New(llm.Config{Platform: p, BaseURL: srv.URL}) // no BaseURL: bedrock-runtime.us-east-1.amazonaws.com
	req := llm.Request{Model: "claude-haiku-4-5", Messages: []llm.Message{{Role: llm.User, Content: []llm.Block{llm.Text{Text: "Hi"}}}}}
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
	// Hello from Bedrock.
	// /model/global.anthropic.claude-haiku-4-5-20251001-v1:0/invoke-with-response-stream
}
