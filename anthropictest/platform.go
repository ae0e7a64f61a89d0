package anthropictest

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// The cloud platforms' routes, which the Server serves besides the
// Anthropic API's, so that the official SDKs' Bedrock and Vertex AI
// adaptations run against it offline:
//
//   - Amazon Bedrock: POST /model/MODEL/invoke-with-response-stream (a
//     stream, answered in AWS's event-stream framing, each event a "chunk"
//     holding the API's event, an error event an exception) and
//     POST /model/MODEL/invoke (the whole Message). Errors have Bedrock's
//     shape: {"message": …} and an x-amzn-ErrorType header.
//   - Vertex AI: POST /v1/projects/P/locations/L/publishers/anthropic/models/MODEL:streamRawPredict
//     (or :rawPredict), and …/models/count-tokens:rawPredict for count_tokens.
//
// The model is the one in the URL, and the body must hold
// anthropic_version and no model (nor, on Bedrock, stream), as the
// platforms require; betas may come in the body's anthropic_beta. Such a
// request is recorded with its Platform set, and answered by the script
// like any other.

// A route is a platform request's place: which platform, the model in its
// URL, and whether it streams or counts tokens.
type route struct {
	platform, model string
	stream, count   bool
}

// platformRoute returns the route of r if it is a platform's.
func platformRoute(r *http.Request) (route, bool) {
	if r.Method != http.MethodPost {
		return route{}, false
	}
	parts := strings.Split(r.URL.EscapedPath(), "/")
	// Bedrock: "", "model", MODEL, method.
	if len(parts) == 4 && parts[1] == "model" && (parts[3] == "invoke" || parts[3] == "invoke-with-response-stream") {
		model, err := url.PathUnescape(parts[2])
		return route{platform: "bedrock", model: model, stream: parts[3] != "invoke"}, err == nil && model != ""
	}
	// Vertex AI: "", "v1", "projects", P, "locations", L, "publishers", "anthropic", "models", MODEL:SPECIFIER.
	if len(parts) == 10 && parts[1] == "v1" && parts[2] == "projects" && parts[4] == "locations" &&
		parts[6] == "publishers" && parts[7] == "anthropic" && parts[8] == "models" {
		last, err := url.PathUnescape(parts[9])
		i := strings.LastIndexByte(last, ':')
		if err != nil || i <= 0 {
			return route{}, false
		}
		model, spec := last[:i], last[i+1:]
		switch {
		case model == "count-tokens" && spec == "rawPredict":
			return route{platform: "vertex", count: true}, true
		case spec == "rawPredict" || spec == "streamRawPredict":
			return route{platform: "vertex", model: model, stream: spec == "streamRawPredict"}, true
		}
	}
	return route{}, false
}

// servePlatform answers a platform's request as the platform would.
func (s *Server) servePlatform(w http.ResponseWriter, r *http.Request, rt route) {
	req := read(r)
	if req == nil {
		return
	}
	req.Platform, req.urlModel, req.urlStream = rt.platform, rt.model, rt.stream
	if rt.platform == "bedrock" {
		bw := &bedrockWriter{w: w}
		defer bw.finish()
		w = bw
	}
	if msg := platformRules(req, rt); msg != "" {
		HTTPError{Status: http.StatusBadRequest, Message: msg}.serve(w, &call{req: req, id: "req_anthropictest_platform"})
		return
	}
	if rt.count {
		s.count(w, req)
		return
	}
	s.serveMessages(w, r, req)
}

// platformRules returns what the platform would refuse in req's body, or "".
func platformRules(req *Request, rt route) string {
	var b struct {
		Version json.RawMessage `json:"anthropic_version"`
		Model   json.RawMessage `json:"model"`
		Stream  json.RawMessage `json:"stream"`
	}
	if err := json.Unmarshal(req.Body, &b); err != nil {
		return "the body is not a JSON object: " + err.Error()
	}
	switch {
	case b.Version == nil:
		return "anthropic_version: field required: on " + rt.platform + " the API version goes in the body"
	case b.Model != nil && !rt.count:
		return "extraneous key [model] is not permitted: on " + rt.platform + " the model goes in the URL"
	case b.Stream != nil && rt.platform == "bedrock":
		return "extraneous key [stream] is not permitted: on bedrock the route says whether to stream"
	}
	return ""
}

// bedrockWriter answers as Bedrock does: a stream's server-sent events in
// AWS's event-stream framing, an error in Bedrock's shape.
type bedrockWriter struct {
	w      http.ResponseWriter
	stream bool         // a 200 stream: events are framed
	status int          // an error's status, held until finish
	buf    bytes.Buffer // the stream's events not yet framed, or the error's body
}

func (b *bedrockWriter) Header() http.Header         { return b.w.Header() }
func (b *bedrockWriter) Unwrap() http.ResponseWriter { return b.w } // for Reset's hijack

func (b *bedrockWriter) WriteHeader(code int) {
	h := b.w.Header()
	switch {
	case code >= 400:
		b.status = code
		return
	case strings.HasPrefix(h.Get("Content-Type"), "text/event-stream"):
		b.stream = true
		h.Set("Content-Type", "application/vnd.amazon.eventstream")
		h.Set("X-Amzn-Requestid", h.Get("Request-Id"))
		h.Del("Request-Id") // Bedrock's own id only
	}
	b.w.WriteHeader(code)
}

func (b *bedrockWriter) Write(p []byte) (int, error) {
	if !b.stream && b.status == 0 {
		return b.w.Write(p)
	}
	b.buf.Write(p)
	if b.stream {
		return len(p), b.frame()
	}
	return len(p), nil
}

// Flush frames the events written so far and sends them.
func (b *bedrockWriter) Flush() {
	b.frame()
	http.NewResponseController(b.w).Flush()
}

// frame writes each complete event in buf as an event-stream message.
func (b *bedrockWriter) frame() error {
	for {
		ev, rest, ok := bytes.Cut(b.buf.Bytes(), []byte("\n\n"))
		if !ok {
			return nil
		}
		var name string
		var data []byte
		for line := range bytes.SplitSeq(ev, []byte("\n")) {
			if v, ok := bytes.CutPrefix(line, []byte("event: ")); ok {
				name = string(v)
			} else if v, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				data = v
			}
		}
		msg := eventstream.Message{}
		if name == "error" {
			var e struct {
				Error struct{ Type, Message string }
			}
			json.Unmarshal(data, &e)
			msg.Headers.Set(":message-type", eventstream.StringValue("exception"))
			msg.Headers.Set(":exception-type", eventstream.StringValue(cmp.Or(bedrockStreamErrors[e.Error.Type], "modelStreamErrorException")))
			msg.Payload, _ = json.Marshal(map[string]string{"message": e.Error.Message})
		} else {
			msg.Headers.Set(":message-type", eventstream.StringValue("event"))
			msg.Headers.Set(":event-type", eventstream.StringValue("chunk"))
			msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
			msg.Payload, _ = json.Marshal(map[string]string{"bytes": base64.StdEncoding.EncodeToString(data)})
		}
		if err := eventstream.NewEncoder().Encode(b.w, msg); err != nil {
			return err
		}
		b.buf.Next(len(b.buf.Bytes()) - len(rest))
	}
}

// finish writes a held error in Bedrock's shape.
func (b *bedrockWriter) finish() {
	if b.status == 0 {
		return
	}
	var e struct {
		Error struct{ Type, Message string }
	}
	if json.Unmarshal(b.buf.Bytes(), &e) != nil {
		e.Error.Message = b.buf.String()
	}
	body, _ := json.Marshal(map[string]string{"message": e.Error.Message})
	h := b.w.Header()
	h.Set("X-Amzn-Errortype", cmp.Or(bedrockErrors[b.status], "InternalServerException")+":http://internal.amazon.com/coral/com.amazon.bedrock/")
	h.Set("X-Amzn-Requestid", h.Get("Request-Id"))
	h.Del("Request-Id")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	b.w.WriteHeader(b.status)
	b.w.Write(body)
}

// bedrockErrors are Bedrock's error types, by HTTP status.
var bedrockErrors = map[int]string{400: "ValidationException", 403: "AccessDeniedException",
	404: "ResourceNotFoundException", 408: "ModelTimeoutException", 424: "ModelErrorException",
	429: "ThrottlingException", 503: "ServiceUnavailableException", 529: "ServiceUnavailableException"}

// bedrockStreamErrors are the exceptions Bedrock ends a stream with, by
// the API's error type.
var bedrockStreamErrors = map[string]string{"overloaded_error": "serviceUnavailableException",
	"rate_limit_error": "throttlingException", "api_error": "internalServerException",
	"invalid_request_error": "validationException"}
