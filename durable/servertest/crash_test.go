package servertest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	serverrors "go.temporal.io/server/common/serviceerror"
	"google.golang.org/grpc/status"

	"github.com/agentloop/agentloop/anthropictest"
	. "github.com/agentloop/agentloop/durable"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// The crash test runs a worker in a child process: the test binary,
// re-executed with these variables set.
const (
	envWorker    = "DURABLE_TEST_WORKER" // the Temporal frontend's host:port
	envNamespace = "DURABLE_TEST_NAMESPACE"
	envAPI       = "DURABLE_TEST_API"   // the fake Anthropic API's URL
	envDir       = "DURABLE_TEST_DIR"   // the log of tool runs
	envBlobs     = "DURABLE_TEST_BLOBS" // the blob store
	envQueue     = "DURABLE_TEST_QUEUE"
	envOnce      = "DURABLE_TEST_AT_MOST_ONCE" // a tool for Config.AtMostOnce
	envAgents    = "DURABLE_TEST_AGENTS"       // set: Config.Agents is crashAgents
)

func TestMain(m *testing.M) {
	if os.Getenv(envWorker) != "" {
		if err := childWorker(); err != nil {
			fmt.Fprintln(os.Stderr, "child worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// crashTools are the tools of the crash test. Each run appends the tool's
// name to dir/ran, so that runs in both processes are counted. When block
// is set, "second" says so on stdout and then runs until it is killed.
func crashTools(dir string, block bool) []*tool.Tool {
	logRun := func(name string) error {
		f, err := os.OpenFile(filepath.Join(dir, "ran"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(f, name)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	type none struct{}
	first := tool.Must(tool.New("first", "the quick tool", func(ctx context.Context, _ none) (string, error) {
		return "one", logRun("first")
	}))
	second := tool.Must(tool.New("second", "the slow tool", func(ctx context.Context, _ none) (string, error) {
		if err := logRun("second"); err != nil {
			return "", err
		}
		if block {
			fmt.Println("second started")
			<-ctx.Done()
			return "", ctx.Err()
		}
		return "two", nil
	}))
	return []*tool.Tool{first, second}
}

// childWorker serves the crash test's task queue until it is killed.
func childWorker() error {
	dir := os.Getenv(envDir)
	c, err := client.Dial(client.Options{
		HostPort:      os.Getenv(envWorker),
		Namespace:     os.Getenv(envNamespace),
		DataConverter: DataConverter(DirStore(os.Getenv(envBlobs))),
	})
	if err != nil {
		return err
	}
	defer c.Close()
	reg := tool.NewRegistry(tool.Config{})
	if err := reg.Register(crashTools(dir, true)...); err != nil {
		return err
	}
	w := worker.New(c, os.Getenv(envQueue), testWorkerOptions())
	cfg := Config{Model: llm.New(llm.Config{BaseURL: os.Getenv(envAPI)}), Registry: reg}
	if once := os.Getenv(envOnce); once != "" {
		cfg.AtMostOnce = []string{once}
	}
	if os.Getenv(envAgents) != "" {
		if cfg.Agents, err = crashAgents(reg); err != nil {
			return err
		}
	}
	if err := Register(w, cfg); err != nil {
		return err
	}
	return w.Run(worker.InterruptCh())
}

// startWorker starts childWorker in a child process, on queue, with env
// added to its environment. started is closed when its second tool starts;
// kill kills it, and the test's end does if the test has not.
func startWorker(t *testing.T, e *env, queue, dir string, env ...string) (started <-chan struct{}, kill func()) {
	t.Helper()
	// The child gets only what it needs: no secret of this process.
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append([]string{
		envWorker + "=" + e.ts.GetFrontendHostPort(),
		envNamespace + "=" + e.ts.GetDefaultNamespace(),
		envAPI + "=" + e.api.URL,
		envDir + "=" + dir,
		envBlobs + "=" + string(e.store),
		envQueue + "=" + queue,
	}, env...)
	child.Stderr = os.Stderr
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	kill = func() {
		once.Do(func() {
			if err := child.Process.Kill(); err != nil { // SIGKILL: no cleanup
				t.Error(err)
			}
			child.Wait()
		})
	}
	t.Cleanup(kill)
	ch := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "second started" {
				close(ch)
				break
			}
		}
		for sc.Scan() { // drain until the child exits
		}
	}()
	return ch, kill
}

// newCrashWorker starts a worker in this process that takes over from a
// killed one: the crash test's tools, which do not block, and the
// subagent if withAgents.
func newCrashWorker(t *testing.T, e *env, queue, dir string, withAgents bool) worker.Worker {
	t.Helper()
	reg := tool.NewRegistry(tool.Config{})
	if err := reg.Register(crashTools(dir, false)...); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Model: llm.New(llm.Config{BaseURL: e.api.URL, MaxAttempts: 1}), Registry: reg}
	if withAgents {
		var err error
		if cfg.Agents, err = crashAgents(reg); err != nil {
			t.Fatal(err)
		}
	}
	w := worker.New(e.c, queue, testWorkerOptions())
	if err := Register(w, cfg); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	return w
}

// waitEvent long-polls the history of workflow id until done returns true
// for an event, and fails t if the workflow closes first.
//
// A long poll that races a new event can fail with the server's "current
// branch changed"; the poll is then opened again, and the events done has
// already seen are skipped, since done keeps state.
func waitEvent(t *testing.T, c client.Client, id string, done func(*historypb.HistoryEvent) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var seen int64
	for again := true; again; {
		again = false
		it := c.GetWorkflowHistory(ctx, id, "", true, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if branchChanged(err) && ctx.Err() == nil {
				t.Logf("history of %s: %v; polling again", id, err)
				again = true
				break
			}
			if err != nil {
				t.Fatalf("history of %s: %v", id, err)
			}
			if ev.EventId <= seen {
				continue
			}
			seen = ev.EventId
			if done(ev) {
				return
			}
		}
	}
	t.Fatalf("workflow %s closed before the event the test waits for", id)
}

// branchChanged reports whether err is the server's CurrentBranchChanged,
// which the client sees as a plain InvalidArgument: the server's own
// conversion of the status's details tells them apart.
func branchChanged(err error) bool {
	var changed *serverrors.CurrentBranchChanged
	return err != nil && errors.As(serverrors.FromStatus(serviceerror.ToStatus(err)), &changed)
}

// completed returns an event test that is true once an activity whose ID
// contains part, or whose type is part, has completed.
func completed(part string) func(*historypb.HistoryEvent) bool {
	scheduled := map[int64]bool{}
	return func(ev *historypb.HistoryEvent) bool {
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && (strings.Contains(a.ActivityId, part) || a.ActivityType.GetName() == part) {
			scheduled[ev.EventId] = true
		}
		a := ev.GetActivityTaskCompletedEventAttributes()
		return a != nil && scheduled[a.ScheduledEventId]
	}
}

// attempts returns, for each activity of the closed workflow id that
// started, the attempt that ran last: more than 1 when Temporal retried it,
// as it may on a loaded machine when an attempt times out.
func attempts(t *testing.T, c client.Client, id string) map[string]int32 {
	t.Helper()
	ids := map[int64]string{} // scheduled event → activity ID
	got := map[string]int32{}
	it := c.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatalf("history of %s: %v", id, err)
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			ids[ev.EventId] = a.ActivityId
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil {
			got[ids[a.ScheduledEventId]] = a.Attempt
		}
	}
	return got
}

// TestWorkerKilledMidTool kills the worker while the second tool of a turn
// runs, after the first has completed, and finishes the run on a new
// worker: the first tool ran once, the second twice; or once, with an
// is_error result, when it is at-most-once.
func TestWorkerKilledMidTool(t *testing.T) {
	e := newEnv(t)
	for _, tt := range []struct {
		name       string
		atMostOnce bool
		ran        []string
		second     string
	}{
		{"at-least-once", false, []string{"first", "second", "second"}, "two"},
		{"at-most-once", true, []string{"first", "second"}, "not completed: the worker running this call failed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			killMidTool(t, e, tt.name, tt.atMostOnce, tt.ran, tt.second)
		})
	}
	e.checkRequests(t)
}

func killMidTool(t *testing.T, e *env, queue string, atMostOnce bool, wantRan []string, wantSecond string) {
	e.api.Enqueue(
		anthropictest.NewStream().ToolUse("toolu_1", "first", `{}`).ToolUse("toolu_2", "second", `{}`).Stop("tool_use"),
		anthropictest.NewStream().Text("Both done.").Stop("end_turn"),
	)
	dir := t.TempDir()
	var extra []string
	if atMostOnce {
		extra = append(extra, envOnce+"=second")
	}
	started, kill := startWorker(t, e, queue, dir, extra...)

	c := e.c
	wr, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: queue, TaskQueue: queue},
		WorkflowName, Input{Prompt: "run both", Heartbeat: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	waitEvent(t, c, queue, completed("/first/"))
	<-started
	kill()
	w := newCrashWorker(t, e, queue, dir, false)
	defer w.Stop()

	var res Result
	if err := wr.Get(context.Background(), &res); err != nil {
		t.Fatal(err)
	}
	if res.Text != "Both done." {
		t.Errorf("text = %q, want %q", res.Text, "Both done.")
	}
	ran, err := os.ReadFile(filepath.Join(dir, "ran"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(ran)); !sameCounts(got, wantRan) {
		t.Errorf("tools ran %q, want %q", got, wantRan)
	}
	reqs := e.api.Requests()
	results := reqs[len(reqs)-1].ToolResults()
	if len(results) != 2 || results[0].Content[0].Text != "one" || !strings.HasPrefix(results[1].Content[0].Text, wantSecond) {
		t.Errorf("tool results sent = %+v, want one and %q", results, wantSecond)
	}
	// The new worker got the turn's new messages and the name of the
	// dead worker's request, whose messages it read from the workflow.
	if msgs := reqs[len(reqs)-1].Messages(); len(msgs) != 3 || msgs[0].Content[0].Text != "run both" {
		t.Errorf("the last request holds %d messages (%+v), want the prompt, the calls and their results", len(msgs), msgs)
	}
}

// sameCounts reports whether a and b hold the same strings as often.
func sameCounts(a, b []string) bool {
	n := map[string]int{}
	for _, s := range a {
		n[s]++
	}
	for _, s := range b {
		n[s]--
	}
	for _, v := range n {
		if v != 0 {
			return false
		}
	}
	return len(a) == len(b)
}

// TestBranchChanged: the error waitEvent polls again on is told apart from
// other invalid arguments after the trip through gRPC's status.
func TestBranchChanged(t *testing.T) {
	changed := serviceerror.FromStatus(serverrors.NewCurrentBranchChanged([]byte("a"), []byte("b"), nil, nil).(interface{ Status() *status.Status }).Status())
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{changed, true},
		{fmt.Errorf("wrapped: %w", changed), true},
		{serviceerror.NewInvalidArgument("bad"), false},
		{context.Canceled, false},
		{nil, false},
	} {
		if got := branchChanged(tt.err); got != tt.want {
			t.Errorf("branchChanged(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
