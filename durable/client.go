package durable

import (
	"context"

	"go.temporal.io/sdk/client"

	"github.com/agentloop/agentloop/tool"
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
func Pending(ctx context.Context, c client.Client, workflowID string) ([]tool.Call, error) {
	v, err := c.QueryWorkflow(ctx, workflowID, "", QueryPending)
	if err != nil {
		return nil, err
	}
	var calls []tool.Call
	err = v.Get(&calls)
	return calls, err
}
