package memory_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/agentloop/agentloop/anthropictest"
)

// cacheSim reports usage the way the Messages API does with prompt
// caching, so that tests and the benchmark see realistic numbers:
//
//   - the prompt is tools, then system, then message blocks; a block costs
//     ceil(len(JSON)/4) tokens (cache_control markers excluded);
//   - a breakpoint is a unit carrying cache_control; a prefix ending at a
//     breakpoint of at least minCache tokens is written to the cache;
//   - cache read is the longest previously cached prefix that this prompt
//     starts with (the API finds it by looking back from the breakpoints);
//   - cache write is the rest of the prompt up to the last breakpoint;
//   - input is the rest.
type cacheSim struct {
	mu     sync.Mutex
	cached map[[32]byte]int // prefix hash → its tokens
}

const minCache = 1024 // the API's minimum cacheable prompt (Sonnet)

var cacheMarks = [][]byte{
	[]byte(`,"cache_control":{"type":"ephemeral"}`),
	[]byte(`"cache_control":{"type":"ephemeral"},`),
}

func newCacheSim() *cacheSim { return &cacheSim{cached: map[[32]byte]int{}} }

// usage returns input, cache write and cache read for a request.
func (c *cacheSim) usage(r *anthropictest.Request) (input, write, read int, err error) {
	p, err := r.Params()
	if err != nil {
		return 0, 0, 0, err
	}
	type unit struct {
		raw []byte
		bp  bool
	}
	var units []unit
	add := func(prefix string, raw []byte) {
		clean := raw
		for _, m := range cacheMarks {
			clean = bytes.ReplaceAll(clean, m, nil)
		}
		units = append(units, unit{append([]byte(prefix), clean...), len(clean) != len(raw)})
	}
	for _, t := range p.Tools {
		add("tool:", t)
	}
	if len(p.System) > 0 {
		add("system:", p.System)
	}
	for _, m := range p.Prompt { // what the model reads: from a compaction block on
		for i, b := range m.Content {
			role := ""
			if i == 0 {
				role = m.Role + ":"
			}
			add(role, b.Raw)
		}
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	h := sha256.New()
	total, lastBP := 0, 0
	var bps [][32]byte
	var bpTokens []int
	for _, u := range units {
		h.Write(u.raw)
		h.Write([]byte{0})
		total += (len(u.raw) + 3) / 4
		var sum [32]byte
		copy(sum[:], h.Sum(nil))
		if n, ok := c.cached[sum]; ok && n > read {
			read = n
		}
		if u.bp {
			lastBP = total
			bps = append(bps, sum)
			bpTokens = append(bpTokens, total)
		}
	}
	for i, s := range bps {
		if bpTokens[i] >= minCache {
			c.cached[s] = bpTokens[i]
		}
	}
	if lastBP >= minCache && lastBP > read {
		write = lastBP - read
	}
	input = total - read - write
	return input, write, read, nil
}

// isSummaryRequest tells the summarisation call (no tools, a transcript)
// from a turn of the agent.
func isSummaryRequest(r *anthropictest.Request) bool {
	p, err := r.Params()
	return err == nil && len(p.Tools) == 0 && len(p.Messages) == 1 &&
		strings.HasPrefix(p.Messages[0].Text, "<transcript>")
}

// toolReply answers a turn with a tool call, usage from the simulator.
func (c *cacheSim) toolReply(r *anthropictest.Request, n int) anthropictest.Reply {
	in, w, rd, err := c.usage(r)
	if err != nil {
		return anthropictest.HTTPError{Status: 400, Type: "invalid_request_error", Message: err.Error()}
	}
	input, _ := json.Marshal(map[string]string{"path": fmt.Sprintf("/data/file%03d.txt", n)})
	return anthropictest.NewStream().Usage(in, 1, w, rd).
		Text(fmt.Sprintf("Reading file %d to continue the task.", n)).
		ToolUse(fmt.Sprintf("toolu_%03d", n), "read_file", string(input)).
		Stop("tool_use", 40)
}

// finalReply ends the session.
func (c *cacheSim) finalReply(r *anthropictest.Request) anthropictest.Reply {
	in, w, rd, err := c.usage(r)
	if err != nil {
		return anthropictest.HTTPError{Status: 400, Type: "invalid_request_error", Message: err.Error()}
	}
	return anthropictest.NewStream().Usage(in, 1, w, rd).Text("The total is 1234.").Stop("end_turn", 10)
}

// summaryReply answers a summarisation call.
func (c *cacheSim) summaryReply(r *anthropictest.Request) anthropictest.Reply {
	in, _, _, _ := c.usage(r)
	return anthropictest.NewStream().Usage(in, 1, 0, 0).
		Text("## Original task\nAdd up the numbers in every file under /data.\n## Key facts\nfiles read so far hold values 0..n.").
		Stop("end_turn", 300)
}
