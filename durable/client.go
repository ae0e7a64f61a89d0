package durable

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/memory/jsonl"
)

// Approve decides a call that waits for approval in the run whose workflow
// ID is workflowID. It returns once the run has recorded the decision, or
// an error if no such call waits.
func Approve(ctx context.Context, c client.Client, workflowID string, d Decision) error {
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   workflowID,
		UpdateName:   UpdateApprove,
		Args:         []any{d},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return err
	}
	return h.Get(ctx, nil)
}

// Pending returns the calls of the run whose workflow ID is workflowID
// that wait for approval, in the order they came.
func Pending(ctx context.Context, c client.Client, workflowID string) ([]llm.ToolUse, error) {
	v, err := c.QueryWorkflow(ctx, workflowID, "", QueryPending)
	if err != nil {
		return nil, err
	}
	var calls []llm.ToolUse
	err = v.Get(&calls)
	return calls, err
}

// Conversation returns the conversation of the latest run whose workflow
// ID is workflowID, to continue it with: the run's Result.History if it
// completed, or, since a failed run changes nothing, the conversation it
// started from if it failed or was terminated. dc must be the client's data
// converter. It waits for a run in progress to end.
func Conversation(ctx context.Context, c client.Client, dc converter.DataConverter, workflowID string) ([]llm.Message, error) {
	var res Result
	err := c.GetWorkflow(ctx, workflowID, "").Get(ctx, &res)
	if err == nil {
		return res.History, nil
	}
	var failed *temporal.WorkflowExecutionError
	if !errors.As(err, &failed) {
		return nil, err
	}
	// Continue-as-new makes a chain of runs: the first's input is the
	// conversation before the run, unless it was itself a resumption.
	it := c.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return nil, fmt.Errorf("durable: workflow %s has no history", workflowID)
	}
	ev, err := it.Next()
	if err != nil {
		return nil, err
	}
	started := ev.GetWorkflowExecutionStartedEventAttributes()
	if started == nil {
		return nil, fmt.Errorf("durable: workflow %s: its first event is %s", workflowID, ev.EventType)
	}
	var in Input
	if err := dc.FromPayloads(started.Input, &in); err != nil {
		return nil, fmt.Errorf("durable: workflow %s: reading its input: %w", workflowID, err)
	}
	if res := in.Resume; res != nil && res.Before == nil {
		h, err := jsonl.Decode(bytes.NewReader(res.History), memory.Config{})
		if err != nil {
			return nil, fmt.Errorf("durable: workflow %s: reading its carried history: %w", workflowID, err)
		}
		msgs := h.Messages()
		return msgs[:min(res.BeforeLen, len(msgs))], nil
	} else if res != nil {
		return res.Before, nil
	}
	return in.History, nil
}
