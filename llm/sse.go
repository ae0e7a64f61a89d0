package llm

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// maxEventSize bounds the bytes of one server-sent event, so that a broken
// or hostile server cannot make the reader buffer without end. Real data
// lines reach tens of kilobytes; a tool input sent whole can reach
// megabytes. The official SDK allows 32 MiB; so do we.
const maxEventSize = 32 << 20

// errEventTooLarge is wrapped in ErrMalformedEvent when an event passes
// maxEventSize.
var errEventTooLarge = fmt.Errorf("%w: event larger than %d bytes", ErrMalformedEvent, maxEventSize)

// sseReader splits a text/event-stream into events, following the WHATWG
// rules: lines end in CRLF, LF or a lone CR; a line starting with a colon
// is a comment; "data" lines of one event are joined with LF; one space
// after the colon is dropped; a blank line ends the event. Unlike the
// standard, an event still pending at the end of the stream is delivered,
// so a missing final blank line loses nothing.
//
// It reads straight out of the bufio.Reader's buffer, so there is no line
// length limit other than maxEventSize, and it copies each byte at most
// once.
type sseReader struct {
	br     *bufio.Reader
	own    *bufio.Reader // the buffer reset gives br, kept from stream to stream
	long   []byte        // a line longer than br's buffer, assembled here
	skipLF bool          // the last line ended in CR; a LF right after it is part of that end
	noLF   int           // how many buffered bytes are known to hold no LF, so none is scanned twice
	bom    bool          // the byte-order mark check is done

	name []byte // the event field of the pending event
	data []byte // the joined data lines of the pending event, each ending in LF
	seen bool   // the pending event has an event or data field
}

func newSSEReader(r io.Reader) *sseReader {
	s := new(sseReader)
	s.reset(r)
	return s
}

// reset makes s read r from the start, keeping its buffers for reuse. A
// *bufio.Reader is read as it is, which lets tests use small buffers;
// anything else is read through s's own 64 KiB buffer.
func (s *sseReader) reset(r io.Reader) {
	*s = sseReader{own: s.own, long: s.long[:0], name: s.name[:0], data: s.data[:0]}
	if r == nil {
		if s.own != nil {
			s.own.Reset(nil) // let go of the last stream's body
		}
		return
	}
	if br, ok := r.(*bufio.Reader); ok {
		s.br = br
		return
	}
	if s.own == nil {
		s.own = bufio.NewReaderSize(r, 64<<10)
	} else {
		s.own.Reset(r)
	}
	s.br = s.own
}

// next returns the next event's name and data, without the final LF. Both
// are valid only until the following call. At the end of the stream it
// returns io.EOF; a broken connection gives the transport's error.
func (s *sseReader) next() (name, data []byte, err error) {
	s.name, s.data, s.seen = s.name[:0], s.data[:0], false
	for {
		line, err := s.line()
		if err != nil {
			if err == io.EOF && s.seen {
				return s.name, trimLF(s.data), nil
			}
			return nil, nil, err
		}
		if len(line) == 0 {
			if s.seen {
				return s.name, trimLF(s.data), nil
			}
			continue
		}
		if line[0] == ':' {
			continue // a comment
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "event":
			s.name = append(s.name[:0], value...)
			s.seen = true
		case "data":
			if len(s.data)+len(value) >= maxEventSize {
				return nil, nil, errEventTooLarge
			}
			s.data = append(s.data, value...)
			s.data = append(s.data, '\n')
			s.seen = true
		}
		// id, retry and unknown fields mean nothing to this API.
	}
}

func trimLF(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		return b[:n-1]
	}
	return b
}

// line returns the next line without its end. It is valid until the next
// call. A last line without an end is returned before io.EOF.
func (s *sseReader) line() ([]byte, error) {
	s.long = s.long[:0]
	for {
		n := s.br.Buffered()
		if n == 0 {
			if _, err := s.br.Peek(1); err != nil {
				if errors.Is(err, io.EOF) && len(s.long) > 0 {
					return s.long, nil
				}
				return nil, err
			}
			n = s.br.Buffered()
		}
		buf, _ := s.br.Peek(n)
		if s.skipLF {
			s.skipLF = false
			if buf[0] == '\n' {
				s.discard(1)
				continue
			}
		}
		if !s.bom {
			s.bom = true
			if bytes.HasPrefix(buf, []byte("\xEF\xBB\xBF")) {
				s.discard(3)
				continue
			}
		}
		// Find the first LF, skipping what an earlier call already
		// searched: a stream of lone CRs would otherwise be searched
		// again for every line, in quadratic time.
		seg := buf
		i := -1
		if s.noLF < len(buf) {
			if j := bytes.IndexByte(buf[s.noLF:], '\n'); j >= 0 {
				i = s.noLF + j
				seg = buf[:i]
			}
		}
		if i < 0 {
			s.noLF = len(buf)
		} else {
			s.noLF = i
		}
		end, adv := i, i+1
		if j := bytes.IndexByte(seg, '\r'); j >= 0 {
			end, adv = j, j+1
			if j+1 < len(buf) {
				if buf[j+1] == '\n' {
					adv++
				}
			} else {
				s.skipLF = true // the LF, if any, has not arrived yet
			}
		}
		if end < 0 {
			// No line end buffered yet: keep what there is and read on.
			if len(s.long)+len(buf) > maxEventSize {
				return nil, errEventTooLarge
			}
			s.long = append(s.long, buf...)
			s.discard(len(buf))
			continue
		}
		line := buf[:end]
		if len(s.long) > 0 {
			if len(s.long)+len(line) > maxEventSize {
				return nil, errEventTooLarge
			}
			s.long = append(s.long, line...)
			line = s.long
		}
		// Discard only moves the read position; the bytes of line stay
		// in place until the next read.
		s.discard(adv)
		return line, nil
	}
}

// discard skips n buffered bytes.
func (s *sseReader) discard(n int) {
	s.br.Discard(n)
	s.noLF = max(0, s.noLF-n)
}
