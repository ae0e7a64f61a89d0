package anthropictest

import (
	"bufio"
	"context"
	"errors"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestErrorEvent(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	srv := NewServer(NewStream().Text("partial").ErrorEvent("overloaded_error", "Overloaded"))
	defer srv.Close()
	resp := post(t, context.Background(), newClient(t), srv.URL)
	defer resp.Body.Close()
	evs, err := readEvents(resp.Body) // ends cleanly: the server closes after the error
	if err != nil {
		t.Fatalf("reading: %v", err)
	}
	want := []string{"message_start", "content_block_start", "ping", "content_block_delta", "error"}
	if diff := cmp.Diff(want, eventNames(evs)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	// The error event carries the request's id, as the request-id header does.
	if got, want := evs[len(evs)-1].data, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"`+resp.Header.Get("Request-Id")+`"}`; got != want {
		t.Errorf("error data = %s, want %s", got, want)
	}
}

func TestEndWithoutStop(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	srv := NewServer(NewStream().Text("a", "b").EndBlock().EndWithoutStop())
	defer srv.Close()
	resp := post(t, context.Background(), newClient(t), srv.URL)
	defer resp.Body.Close()
	evs, err := readEvents(resp.Body)
	if err != nil {
		t.Fatalf("reading: %v (want a clean end)", err)
	}
	want := []string{"message_start", "content_block_start", "ping", "content_block_delta", "content_block_delta", "content_block_stop"}
	if diff := cmp.Diff(want, eventNames(evs)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestReset(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	srv := NewServer(NewStream().Text("partial").Reset())
	defer srv.Close()
	resp := post(t, context.Background(), newClient(t), srv.URL)
	defer resp.Body.Close()
	evs, err := readEvents(resp.Body)
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("read error = %v, want ECONNRESET", err)
	}
	for _, e := range evs {
		if e.name == "message_stop" || e.name == "content_block_stop" {
			t.Errorf("got %s before the reset", e.name)
		}
	}
}

func TestStallEndsWhenClientLeaves(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	served := make(chan int, 2)
	srv := newServer(hooks{served: func(n int) { served <- n }}, NewStream().Text("x").Stall(), Replay(nil).Stall())
	defer srv.Close()
	client := newClient(t)

	ctx, cancel := context.WithCancel(context.Background())
	resp := post(t, ctx, client, srv.URL)
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "event: message_start\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	cancel()
	resp.Body.Close()
	waitFor(t, served, "the stalled handler to return after the client left")

	// Hang: headers, then nothing at all.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	resp = post(t, ctx, client, srv.URL)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
		t.Errorf("Hang headers: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	cancel()
	resp.Body.Close()
	waitFor(t, served, "the hung handler to return after the client left")
}

func TestStallEndsOnClose(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	srv := NewServer(NewStream().Stall(), NewStream().Pace(time.Hour).Text("never"))
	client := newClient(t)
	var bodies []io.ReadCloser
	for range 2 {
		resp := post(t, context.Background(), client, srv.URL)
		br := bufio.NewReader(resp.Body)
		if line, _ := br.ReadString('\n'); line != "event: message_start\n" {
			t.Fatalf("first line %q", line)
		}
		bodies = append(bodies, resp.Body)
	}
	closed := make(chan struct{})
	go func() { srv.Close(); close(closed) }()
	waitFor(t, closed, "Server.Close with a stalled and a paced reply")
	for _, b := range bodies {
		io.Copy(io.Discard, b)
		b.Close()
	}
}

func TestPace(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	waits := make(chan time.Duration)
	release := make(chan time.Time)
	srv := newServer(hooks{after: func(d time.Duration) <-chan time.Time { waits <- d; return release }},
		NewStream().Text("a").Pace(50*time.Millisecond).Text("b").Pace(0).Event("ping", `{"type": "ping"}`))
	defer srv.Close()
	resp := post(t, context.Background(), newClient(t), srv.URL)
	defer resp.Body.Close()

	// Before Pace: message_start, start, ping, delta "a" flow freely. After it,
	// each event waits for a tick: stop(0), start(1), delta "b".
	got := make(chan []sse, 1)
	go func() { evs, _ := readEvents(resp.Body); got <- evs }()
	for i := range 3 {
		if d := waitFor(t, waits, "a pacing wait"); d != 50*time.Millisecond {
			t.Errorf("wait %d = %v, want 50ms", i, d)
		}
		release <- time.Time{}
	}
	evs := waitFor(t, got, "the paced stream")
	want := []string{"message_start", "content_block_start", "ping", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "ping", "content_block_stop", "message_delta", "message_stop"}
	if diff := cmp.Diff(want, eventNames(evs)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestPaceEndsWhenClientLeaves(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	served := make(chan int, 1)
	srv := newServer(hooks{served: func(n int) { served <- n }}, NewStream().Pace(time.Hour).Text("slow"))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	resp := post(t, ctx, newClient(t), srv.URL)
	if line, _ := bufio.NewReader(resp.Body).ReadString('\n'); line != "event: message_start\n" {
		t.Fatalf("first line %q", line)
	}
	cancel()
	resp.Body.Close()
	waitFor(t, served, "the paced handler to return after the client left")
}
