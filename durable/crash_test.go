package durable

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/agentloop/agentloop/anthropictest"
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
	w := worker.New(c, "crash", worker.Options{})
	if err := Register(w, Config{Model: llm.New(llm.Config{BaseURL: os.Getenv(envAPI)}), Registry: reg}); err != nil {
		return err
	}
	return w.Run(worker.InterruptCh())
}

// waitEvent long-polls the history of workflow id until done returns true
// for an event, and fails t if the workflow closes first.
func waitEvent(t *testing.T, c client.Client, id string, done func(*historypb.HistoryEvent) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	it := c.GetWorkflowHistory(ctx, id, "", true, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatalf("history of %s: %v", id, err)
		}
		if done(ev) {
			return
		}
	}
	t.Fatalf("workflow %s closed before the event the test waits for", id)
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

// TestWorkerKilledMidTool kills the worker while the second tool of a turn
// runs, after the first has completed, and finishes the run on a new
// worker: the first tool ran once, the second twice.
func TestWorkerKilledMidTool(t *testing.T) {
	e := newEnv(t,
		anthropictest.NewStream().ToolUse("toolu_1", "first", `{}`).ToolUse("toolu_2", "second", `{}`).Stop("tool_use"),
		anthropictest.NewStream().Text("Both done.").Stop("end_turn"),
	)
	dir := t.TempDir()
	// The child gets only what it needs: no secret of this process.
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = []string{
		envWorker + "=" + e.ts.GetFrontendHostPort(),
		envNamespace + "=" + e.ts.GetDefaultNamespace(),
		envAPI + "=" + e.api.URL,
		envDir + "=" + dir,
		envBlobs + "=" + string(e.store),
	}
	child.Stderr = os.Stderr
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	defer func() {
		if !exited {
			child.Process.Kill()
			child.Wait()
		}
	}()
	started := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "second started" {
				close(started)
				break
			}
		}
		for sc.Scan() { // drain until the child exits
		}
	}()

	c := e.c
	wr, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: "crash", TaskQueue: "crash"},
		WorkflowName, Input{Prompt: "run both", Heartbeat: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	waitEvent(t, c, "crash", completed("/first/"))
	<-started
	if err := child.Process.Kill(); err != nil { // SIGKILL: no cleanup
		t.Fatal(err)
	}
	child.Wait()
	exited = true

	reg := tool.NewRegistry(tool.Config{})
	if err := reg.Register(crashTools(dir, false)...); err != nil {
		t.Fatal(err)
	}
	w := worker.New(c, "crash", worker.Options{})
	if err := Register(w, Config{Model: llm.New(llm.Config{BaseURL: e.api.URL}), Registry: reg}); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
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
	if got, want := strings.Fields(string(ran)), []string{"first", "second", "second"}; !sameCounts(got, want) {
		t.Errorf("tools ran %q, want first once and second twice", got)
	}
	results := e.api.Requests()[1].ToolResults()
	if len(results) != 2 || results[0].Content[0].Text != "one" || results[1].Content[0].Text != "two" || results[1].IsError {
		t.Errorf("tool results sent = %+v, want one and two", results)
	}
	e.checkRequests(t)
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
