package llm

import (
	"encoding/json"
	"strconv"
)

// message_start and message_delta come once per turn, yet through
// encoding/json they cost some thirty allocations, a tenth of a real
// stream's. They are read with the scanner too.

// mergeUsage overwrites the fields of u that the usage object raw holds;
// an absent or null field must not overwrite what the turn already has.
// Nested objects such as server_tool_use are not modelled and skipped.
func (d *decoder) mergeUsage(raw []byte, u *Usage) bool {
	if raw == nil || string(raw) == "null" {
		return true
	}
	sc := scanObject(raw)
	for k, v, ok := sc.next(&d.keyBuf); ok; k, v, ok = sc.next(&d.keyBuf) {
		var dst *int64
		switch string(k) {
		case "input_tokens":
			dst = &u.InputTokens
		case "output_tokens":
			dst = &u.OutputTokens
		case "cache_creation_input_tokens":
			dst = &u.CacheCreationInputTokens
		case "cache_read_input_tokens":
			dst = &u.CacheReadInputTokens
		default:
			continue
		}
		if string(v) == "null" {
			continue
		}
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return false
		}
		*dst = n
	}
	return !sc.err()
}

// stopField reads v, the value of the stop_reason or stop_sequence field
// k, into md. Null leaves the field empty.
func (d *decoder) stopField(k, v []byte, md *MessageDelta) bool {
	if string(v) == "null" {
		return true
	}
	var ok bool
	switch string(k) {
	case "stop_reason":
		var r []byte
		r, ok = d.rawString(v, &d.strBuf)
		md.StopReason = stopReason(r)
	case "stop_sequence":
		md.StopSequence, ok = unquote(v, &d.strBuf)
	}
	return ok
}

// stopReason returns r as a StopReason, without allocating for the
// reasons the API documents: comparing string(r) does not allocate.
func stopReason(r []byte) StopReason {
	for _, known := range [...]StopReason{EndTurn, MaxTokens, StopSequence, ToolUseStop, PauseTurn,
		Refusal, ModelContextWindowExceeded} {
		if string(r) == string(known) {
			return known
		}
	}
	return StopReason(r)
}

func (d *decoder) messageStart(data []byte) (Event, error) {
	var msg []byte
	sc := scanObject(data)
	for k, v, ok := sc.next(&d.keyBuf); ok; k, v, ok = sc.next(&d.keyBuf) {
		if string(k) == "message" {
			msg = v
		}
	}
	if sc.err() || msg == nil {
		return nil, malformed("message_start", data)
	}
	var (
		id, model, content, usage, container []byte
		md                                   MessageDelta
		stopped                              bool // stop_reason is not null
	)
	bad := false
	sc = scanObject(msg)
	for k, v, ok := sc.next(&d.keyBuf); ok; k, v, ok = sc.next(&d.keyBuf) {
		switch string(k) {
		case "id":
			id = v
		case "model":
			model = v
		case "content":
			content = v
		case "usage":
			usage = v
		case "container":
			container = v
		case "stop_reason":
			stopped = string(v) != "null"
			bad = bad || !d.stopField(k, v, &md)
		case "stop_sequence":
			bad = bad || !d.stopField(k, v, &md)
		}
	}
	ms := MessageStart{}
	var ok1, ok2, ok3 bool
	ms.ID, ok1 = optString(id, &d.strBuf)
	ms.Model, ok2 = optString(model, &d.strBuf)
	ms.Container, ok3 = d.containerID(container)
	// A second message_start restarts the turn (a proxy spliced two
	// responses); usage starts over with it.
	d.usage = Usage{}
	if sc.err() || bad || !ok1 || !ok2 || !ok3 || !d.mergeUsage(usage, &d.usage) {
		return nil, malformed("message_start", data)
	}
	ms.Usage = d.usage
	// A message can arrive with its content already in message_start and
	// no block events (programmatic tool calling). Hand the blocks out as
	// if they had been streamed, so that consumers see one shape. This is
	// rare, so encoding/json splits the array.
	if len(content) > 0 && string(content) != "[]" && string(content) != "null" {
		var blocks []json.RawMessage
		if err := json.Unmarshal(content, &blocks); err != nil {
			return nil, malformed("message_start content", data)
		}
		for i, raw := range blocks {
			if err := d.startEvents(i, raw); err != nil {
				return nil, malformed("message_start content", data)
			}
			d.queue = append(d.queue, BlockStop{Index: i})
		}
	}
	if stopped {
		md.Usage, md.Container = d.usage, ms.Container
		d.queue = append(d.queue, md)
	}
	return ms, nil
}

// containerID reads the id of v, a container object such as
// {"id":"container_…","expires_at":"…"}. Absent and null give "". The
// expiry is not kept: the API renews it with every use, and a request that
// names an expired container gets a clear error.
func (d *decoder) containerID(v []byte) (string, bool) {
	if v == nil || string(v) == "null" {
		return "", true
	}
	var id []byte
	sc := scanObject(v)
	for k, f, ok := sc.next(&d.keyBuf); ok; k, f, ok = sc.next(&d.keyBuf) {
		if string(k) == "id" {
			id = f
		}
	}
	if sc.err() {
		return "", false
	}
	return optString(id, &d.strBuf)
}

// optString is the value of an optional string field: absent and null
// give "".
func optString(v []byte, scratch *[]byte) (string, bool) {
	if v == nil || string(v) == "null" {
		return "", true
	}
	return unquote(v, scratch)
}

func (d *decoder) messageDelta(data []byte) (Event, error) {
	var delta, usage []byte
	sc := scanObject(data)
	for k, v, ok := sc.next(&d.keyBuf); ok; k, v, ok = sc.next(&d.keyBuf) {
		switch string(k) {
		case "delta":
			delta = v
		case "usage":
			usage = v
		}
	}
	var md MessageDelta
	bad := sc.err()
	if delta != nil && string(delta) != "null" {
		ds := scanObject(delta)
		for k, v, ok := ds.next(&d.keyBuf); ok; k, v, ok = ds.next(&d.keyBuf) {
			switch string(k) {
			case "stop_reason", "stop_sequence":
				bad = bad || !d.stopField(k, v, &md)
			case "container":
				var ok bool
				md.Container, ok = d.containerID(v)
				bad = bad || !ok
			}
		}
		bad = bad || ds.err()
	}
	if bad || !d.mergeUsage(usage, &d.usage) {
		return nil, malformed("message_delta", data)
	}
	md.Usage = d.usage
	return md, nil
}
