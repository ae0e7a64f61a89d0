package llm

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
)

// maxEventSize bounds the bytes of one server-sent event, so that a broken
// or hostile server cannot make the reader buffer without end. Real data
// lines reach tens of kilobytes; a tool input sent whole can reach
// megabytes. The official SDK allows 32 MiB; so do we.
const maxEventSize = 32 << 20

// errEventTooLarge is wrapped in errMalformedEvent when an event passes
// maxEventSize.
var errEventTooLarge = fmt.Errorf("%w: event larger than %d bytes", errMalformedEvent, maxEventSize)

// errLoneCR is returned for a line that holds a CR not followed by LF.
var errLoneCR = fmt.Errorf("%w: a lone CR as a line end is not supported", errMalformedEvent)

// sseReader splits a text/event-stream into events, as the MCP Go SDK's
// scanEvents does but without a copy per line: a line starting with a colon
// is a comment, the "data" lines of one event are joined with LF, one space
// after the colon is dropped, and a blank line ends the event. An event
// still pending at the end of the stream is delivered, so a missing final
// blank line loses nothing.
//
// Lines end in LF or CRLF, as both official SDKs read them. A lone CR,
// which the WHATWG standard also allows, is reported as a malformed event
// rather than misread: no Anthropic endpoint or proxy sends one, and a CR
// cannot occur inside a JSON value.
type sseReader struct {
	br   *bufio.Reader
	long []byte // a line longer than br's buffer, assembled here
	data []byte // the joined data lines of the pending event, each ending in LF
	name []byte // the event field of the pending event
	bom  bool   // the byte-order mark check is done
}

// next returns the next event's name and data, without the final LF. Both
// are valid only until the following call. At the end of the stream it
// returns io.EOF; a broken connection gives the transport's error.
func (s *sseReader) next() (name, data []byte, err error) {
	s.name, s.data = s.name[:0], s.data[:0]
	seen := false // the pending event has an event or data field
	for {
		line, err := s.line()
		if err == io.EOF && seen {
			return s.name, bytes.TrimSuffix(s.data, []byte("\n")), nil
		}
		if err != nil {
			return nil, nil, err
		}
		if len(line) == 0 {
			if seen {
				return s.name, bytes.TrimSuffix(s.data, []byte("\n")), nil
			}
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			s.name, seen = append(s.name[:0], value...), true
		case "data":
			if len(s.data)+len(value) >= maxEventSize {
				return nil, nil, errEventTooLarge
			}
			s.data, seen = append(append(s.data, value...), '\n'), true
		}
		// Comments (an empty field), id, retry and unknown fields mean
		// nothing to this API.
	}
}

// line returns the next line without its end, valid until the next call.
// A last line without an end is returned before io.EOF. ReadSlice
// searches each buffered byte once, so a long line costs linear time.
func (s *sseReader) line() ([]byte, error) {
	line, err := s.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		s.long = append(s.long[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = s.br.ReadSlice('\n')
			if len(s.long)+len(line) > maxEventSize {
				return nil, errEventTooLarge
			}
			s.long = append(s.long, line...)
		}
		line = s.long
	}
	if err != nil && (err != io.EOF || len(line) == 0) {
		return nil, err
	}
	if !s.bom {
		s.bom = true
		line = bytes.TrimPrefix(line, []byte("\xEF\xBB\xBF"))
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if bytes.IndexByte(line, '\r') >= 0 {
		return nil, errLoneCR
	}
	return line, nil
}
