package llm

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"
	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/internal/testenv"
)

func readFixture(tb testing.TB, dir, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func fixtureFiles(tb testing.TB) []string {
	dir := testenv.Fixtures(tb)
	files, _ := filepath.Glob(filepath.Join(dir, "*.sse"))
	more, _ := filepath.Glob(filepath.Join(dir, "schematic", "*.sse"))
	return append(files, more...)
}

// sdkAccumulate runs the SDK's decoder and Message.Accumulate over a
// stream, or reports that the SDK rejects it.
func sdkAccumulate(stream []byte) (anthropic.Message, bool) {
	resp := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(stream))}
	s := ssestream.NewStream[anthropic.MessageStreamEventUnion](ssestream.NewDecoder(resp), nil)
	var m anthropic.Message
	for s.Next() {
		if err := m.Accumulate(s.Current()); err != nil {
			return m, false
		}
	}
	return m, s.Err() == nil
}

// normalize decodes a block's JSON for comparison, dropping what is
// allowed to differ: null or empty citations, and a null toolset_name.
func normalize(t *testing.T, raw []byte) map[string]any {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("block %s: %v", raw, err)
	}
	if c, ok := m["citations"]; ok && (c == nil || len(c.([]any)) == 0) {
		delete(m, "citations")
	}
	if v, ok := m["toolset_name"]; ok && v == nil {
		delete(m, "toolset_name")
	}
	return m
}

// TestDifferential checks, for every recorded stream the SDK accepts, that
// our decoder and Assembler build the message Message.Accumulate builds.
//
// Intentional differences, normalised here:
//   - empty text blocks are dropped by the Assembler (the API rejects them
//     when sent back); the SDK keeps them;
//   - a block cut off before its BlockStop is reported by Incomplete, and
//     only its type is compared: the SDK turns a cut tool input into {};
//   - compaction_delta content is merged into the block by us and dropped
//     by the SDK, so only the type of such blocks is compared;
//   - data-only events (no "event:" line) are dispatched on their type by
//     us and dropped by the SDK; such streams are skipped.
func TestDifferential(t *testing.T) {
	compared := 0
	for _, path := range fixtureFiles(t) {
		name := strings.TrimSuffix(filepath.Base(path), ".sse")
		t.Run(name, func(t *testing.T) {
			stream := readFixture(t, filepath.Dir(path), filepath.Base(path))
			want, ok := sdkAccumulate(stream)
			if !ok {
				t.Skip("the SDK rejects this stream")
			}
			if !bytes.Contains(stream, []byte("event: message_start")) {
				t.Skip("the SDK saw no message_start (data-only events)")
			}
			var a Assembler
			evs, err := decodeAll(bytes.NewReader(stream))
			if err != nil {
				t.Logf("our decoder ends with: %v", err)
			}
			for _, ev := range evs {
				a.Add(ev)
			}
			var sdkBlocks []anthropic.ContentBlockUnion
			for _, b := range want.Content {
				if b.Type == "text" && b.Text == "" && len(b.Citations) == 0 {
					continue
				}
				sdkBlocks = append(sdkBlocks, b)
			}
			var ours []*partial
			for _, p := range slices.SortedFunc(maps.Values(a.byIndex), func(x, y *partial) int { return x.index - y.index }) {
				if (p.done && p.block == nil) || (!p.done && p.finish() == nil) {
					continue // a dropped empty text block
				}
				ours = append(ours, p)
			}
			if len(ours) != len(sdkBlocks) {
				t.Fatalf("%d blocks, SDK has %d", len(ours), len(sdkBlocks))
			}
			for i, p := range ours {
				sb := sdkBlocks[i]
				b := p.block
				if !p.done {
					b = p.finish()
				}
				if b.blockType() != sb.Type {
					t.Errorf("block %d: type %s, SDK %s", i, b.blockType(), sb.Type)
					continue
				}
				if !p.done || sb.Type == "compaction" {
					continue
				}
				got, err := json.Marshal(b)
				if err != nil {
					t.Fatalf("block %d: %v", i, err)
				}
				if diff := cmp.Diff(normalize(t, []byte(sb.RawJSON())), normalize(t, got)); diff != "" {
					t.Errorf("block %d (-sdk +ours):\n%s", i, diff)
				}
			}
			if got := a.Turn().StopReason; string(got) != string(want.StopReason) {
				t.Errorf("stop reason %q, SDK %q", got, want.StopReason)
			}
			wantUsage := Usage{
				InputTokens:              want.Usage.InputTokens,
				OutputTokens:             want.Usage.OutputTokens,
				CacheCreationInputTokens: want.Usage.CacheCreationInputTokens,
				CacheReadInputTokens:     want.Usage.CacheReadInputTokens,
				ServerToolUse:            ServerToolUse{want.Usage.ServerToolUse.WebSearchRequests, want.Usage.ServerToolUse.WebFetchRequests},
			}
			got := a.Turn().Usage
			got.Compaction = nil // usage.iterations, which the SDK's Message leaves out (compaction_test.go checks it)
			if diff := cmp.Diff(wantUsage, got); diff != "" {
				t.Errorf("usage (-sdk +ours):\n%s", diff)
			}
			compared++
		})
	}
	t.Logf("compared %d streams with the SDK", compared)
}

// TestFixturesDecode checks that every recorded stream decodes without a
// malformed-event error. The schematic doc examples are left out: they hold
// "..." and comments in place of JSON.
func TestFixturesDecode(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testenv.Fixtures(t), "*.sse"))
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			stream := readFixture(t, filepath.Dir(path), name)
			evs, err := decodeAll(bytes.NewReader(stream))
			if len(evs) == 0 && err == nil {
				t.Error("no events")
			}
			if err != nil && !IsRetryable(err) {
				if _, isAPI := err.(*APIError); !isAPI {
					t.Errorf("err = %v", err)
				}
			}
		})
	}
}

// TestFixturesContainer checks that the container id of every recorded
// code execution stream reaches Assembler.Container: the last one the
// stream names, as the next request must send it.
func TestFixturesContainer(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testenv.Fixtures(t), "*.sse"))
	idRE := regexp.MustCompile(`"container":\{"id":"([^"]+)"`)
	found := 0
	for _, path := range files {
		name := filepath.Base(path)
		stream := readFixture(t, filepath.Dir(path), name)
		ids := idRE.FindAllSubmatch(stream, -1)
		if ids == nil {
			continue
		}
		found++
		t.Run(name, func(t *testing.T) {
			evs, _ := decodeAll(bytes.NewReader(stream))
			var a Assembler
			for _, ev := range evs {
				a.Add(ev)
			}
			if want := string(ids[len(ids)-1][1]); a.Turn().Container != want {
				t.Errorf("Turn().Container = %q, want %q", a.Turn().Container, want)
			}
		})
	}
	if found == 0 {
		t.Error("no recorded stream names a container")
	}
}
