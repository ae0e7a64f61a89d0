package durable

import (
	"context"
	"fmt"
	"reflect"
	"sync"

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

// queryMessages is the query by which a worker that lacks a Prefix's
// messages (it restarted, or another worker ran the turn before) reads them
// from the workflow. A query is not recorded in the history.
const queryMessages = "agentloop.messages"

// sent is the last request of the run that a worker completed: the base of
// the next one's Prefix.
type sent struct {
	version string
	msgs    []llm.Message
}

// version names the model activity id of the workflow run of ctx.
func version(ctx workflow.Context, id string) string {
	return workflow.GetInfo(ctx).WorkflowExecution.RunID + "/" + id
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

// conversations keeps, on a worker, the latest requests of the workflows
// it served, so that a turn that names one by a Prefix finds its messages
// without a query. A request's messages share their content with the one
// it extends, so each costs little more than its new messages.
type conversations struct {
	mu    sync.Mutex
	byID  map[string][]sent // by workflow ID, newest last
	order []string          // workflow IDs, oldest first
}

// Bounds of a worker's conversations: the requests kept per workflow (a
// turn's base may be a few requests back after failed attempts), and the
// workflows.
const (
	keptRequests      = 4
	keptConversations = 1024
)

func (c *conversations) get(id, version string) ([]llm.Message, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.byID[id] {
		if s.version == version {
			return s.msgs, true
		}
	}
	return nil, false
}

func (c *conversations) put(id string, s sent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID == nil {
		c.byID = map[string][]sent{}
	}
	kept, ok := c.byID[id]
	if !ok {
		c.order = append(c.order, id)
		if len(c.order) > keptConversations {
			delete(c.byID, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.byID[id] = append(kept[max(0, len(kept)-keptRequests+1):], s)
}

// request returns the whole request of a model turn, its Prefix's messages
// read from this worker's conversations or else from the workflow, and
// keeps it for the turns that will name it.
func (a *Activities) request(ctx context.Context, in TurnInput) (llm.Request, error) {
	info := activity.GetInfo(ctx)
	wf := info.WorkflowExecution
	req := in.Request
	if p := in.Prefix; p != nil {
		msgs, ok := a.convs.get(wf.ID, p.Version)
		if !ok {
			v, err := activity.GetClient(ctx).QueryWorkflow(ctx, wf.ID, wf.RunID, queryMessages, p.Version)
			if err == nil {
				err = v.Get(&msgs)
			}
			if err != nil {
				return llm.Request{}, fmt.Errorf("durable: reading the conversation from the workflow: %w", err)
			}
		}
		if len(msgs) < p.Len {
			return llm.Request{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("durable: request %s has %d messages, not the %d the turn names", p.Version, len(msgs), p.Len), errAPI, nil)
		}
		req.Messages = append(msgs[:p.Len:p.Len], in.New...)
	}
	a.convs.put(wf.ID, sent{version: wf.RunID + "/" + info.ActivityID, msgs: req.Messages})
	return req, nil
}
