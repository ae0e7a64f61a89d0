package anthropictest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/agentloop/agentloop/internal/testenv"
)

func fixtures(t *testing.T, dir, ext string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ext) {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no %s files in %s", ext, dir)
	}
	return files
}

// TestConformanceReplay replays every recorded stream through the fake
// server and checks the client receives it byte for byte, with the API's
// streaming headers.
func TestConformanceReplay(t *testing.T) {
	dir := testenv.Fixtures(t)
	files := fixtures(t, dir, ".sse")
	replies := make([]Reply, len(files))
	for i, f := range files {
		sse, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r := Replay(sse)
		replies[i] = r
	}
	srv := NewServer(replies...)
	defer srv.Close()
	client := newClient(t)
	for _, f := range files {
		name, _ := filepath.Rel(dir, f)
		want, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		resp := post(t, context.Background(), client, srv.URL)
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Errorf("%s: reading: %v", name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: replayed %d bytes differ from the %d recorded", name, len(got), len(want))
		}
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream; charset=utf-8" {
			t.Errorf("%s: status %d, Content-Type %q", name, resp.StatusCode, ct)
		}
	}
	t.Logf("replayed %d recorded streams from %s", len(files), dir)
}

// TestConformanceRealStreamsThroughSDK replays the real recordings to the
// official SDK, which must accumulate each into a message, showing that
// Replay changes nothing a client can see.
func TestConformanceRealStreamsThroughSDK(t *testing.T) {
	dir := testenv.Fixtures(t)
	for _, f := range fixtures(t, dir, "_real.sse") {
		name, _ := filepath.Rel(dir, f)
		t.Run(name, func(t *testing.T) {
			sse, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			r := Replay(sse)
			srv := NewServer(r)
			defer srv.Close()
			client := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
			stream := client.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{
				Model: "claude-sonnet-5-5", MaxTokens: 1024,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
			})
			defer stream.Close()
			var acc anthropic.Message
			events := 0
			for stream.Next() {
				events++
				if err := acc.Accumulate(stream.Current()); err != nil {
					t.Fatalf("Accumulate: %v", err)
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("stream: %v", err)
			}
			if events == 0 || acc.ID == "" || acc.StopReason == "" {
				t.Errorf("%d events, id %q, stop_reason %q", events, acc.ID, acc.StopReason)
			}
		})
	}
}

// TestHTTPErrorMatchesRecordedBodies checks HTTPError renders the API's
// error body byte for byte, against the recorded bodies that have the
// API's full shape.
func TestHTTPErrorMatchesRecordedBodies(t *testing.T) {
	dir := testenv.Fixtures(t)
	checked := 0
	for _, f := range fixtures(t, filepath.Join(dir, "http_errors"), ".json") {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var rec struct {
			Type  string
			Error struct {
				Type, Message string
			}
			RequestID *string `json:"request_id"`
		}
		if err := json.Unmarshal(raw, &rec); err != nil || rec.Type != "error" || rec.RequestID == nil {
			continue // older or proxy shapes: no request_id, or not the API's envelope
		}
		var want bytes.Buffer
		json.Compact(&want, raw)
		status, _ := strconv.Atoi(filepath.Base(f)[:3])

		srv := NewServer(HTTPError{Status: status, Type: rec.Error.Type, Message: rec.Error.Message, RequestID: *rec.RequestID})
		resp := post(t, context.Background(), newClient(t), srv.URL)
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		if resp.StatusCode != status || !bytes.Equal(got, want.Bytes()) || resp.Header.Get("Request-Id") != *rec.RequestID {
			t.Errorf("%s: got %d %s (request-id %q)\nwant %d %s", filepath.Base(f), resp.StatusCode, got, resp.Header.Get("Request-Id"), status, want.Bytes())
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no recorded error body has the API's full shape")
	}
	t.Logf("checked %d recorded error bodies", checked)
}
