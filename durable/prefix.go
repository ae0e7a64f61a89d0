package durable

import (
	"context"
	"fmt"
	"reflect"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentloop/agentloop/llm"
)

// A Prefix names the first Len messages of an earlier model request of the
// run, by its Version, so that a turn sends only what follows them: a
// conversation in every turn's input would make the workflow history grow
// with the square of its length.
type Prefix struct {
	Version string `json:"version"`
	Len     int    `json:"len"`
}

// queryMessages is the query by which the model activity reads a Prefix's
// messages from the workflow. A query is not recorded in the history.
const queryMessages = "agentloop.messages"

// sent is the last request of the run that a worker completed: the base of
// the next one's Prefix.
type sent struct {
	version string
	msgs    []llm.Message
}

// refer replaces the messages of in's request that the last sent request
// began with by a Prefix naming them.
func (r *run) refer(in *TurnInput) {
	msgs := in.Request.Messages
	n := commonPrefix(msgs, r.sent.msgs)
	if n == 0 {
		return
	}
	in.Prefix = &Prefix{Version: r.sent.version, Len: n}
	in.New = msgs[n:]
	in.Request.Messages = nil
}

// commonPrefix returns how many messages a and b begin with alike.
func commonPrefix(a, b []llm.Message) int {
	n := 0
	for n < len(a) && n < len(b) && reflect.DeepEqual(a[n], b[n]) {
		n++
	}
	return n
}

// messagesHandler answers queryMessages: the messages of the request
// Version, which is the last sent one, or none.
func (r *run) messagesHandler() error {
	return workflow.SetQueryHandler(r.root, queryMessages, func(v string) ([]llm.Message, error) {
		if v != r.sent.version {
			return nil, fmt.Errorf("durable: the run has no request %q", v)
		}
		return r.sent.msgs, nil
	})
}

// request returns the whole request of a model turn, its Prefix's messages
// read from the workflow with a query, which the history does not record.
func (a *Activities) request(ctx context.Context, in TurnInput) (llm.Request, error) {
	wf := activity.GetInfo(ctx).WorkflowExecution
	req := in.Request
	p := in.Prefix
	if p == nil {
		return req, nil
	}
	var msgs []llm.Message
	v, err := activity.GetClient(ctx).QueryWorkflow(ctx, wf.ID, wf.RunID, queryMessages, p.Version)
	if err == nil {
		err = v.Get(&msgs)
	}
	if err != nil {
		return llm.Request{}, fmt.Errorf("durable: reading the conversation from the workflow: %w", err)
	}
	if len(msgs) < p.Len {
		return llm.Request{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("durable: request %s has %d messages, not the %d the turn names", p.Version, len(msgs), p.Len), errAPI, nil)
	}
	req.Messages = append(msgs[:p.Len:p.Len], in.New...)
	return req, nil
}
